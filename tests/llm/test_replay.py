"""The replay model reproduces a bundle's responses exactly, without any model."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import ModelSpec
from workbench.errors import ConfigError, ModelError
from workbench.llm import make_model
from workbench.llm.base import ChatResult, split_extraction, with_extraction
from workbench.runtime import Simulation

COLUMNS = ["agent_id", "round", "guess", "status", "raw", "prompt_tokens", "completion_tokens"]


class HalfFailingModel:
    """Odd agents' requests fail; even agents answer their agent id."""

    identity = {"engine": "fake", "name": "half"}

    async def generate(self, requests, params):
        return [
            ChatResult(None, error="down", error_kind="timeout")
            if r.agent_id % 2
            else ChatResult(str(r.agent_id + r.round), 7, 1)
            for r in requests
        ]


class RamblingModel:
    """Free-form answers; those without a number go to the paper's extraction call.

    By agent id mod 4: 0 answers with a number; 1 rambles and its extraction parses; 2 rambles
    and its extraction has no number (round 1) or is out of range (round 2); 3 rambles and its
    extraction times out. Agent 3's answers time out.
    """

    identity = {"engine": "fake", "name": "rambling"}

    async def generate(self, requests, params):
        return [self._answer(r) for r in requests]

    @staticmethod
    def _answer(request) -> ChatResult:
        extracting = request.messages[-1]["content"].startswith("Here is a player's answer")
        assert request.step == ("extract" if extracting else "answer")
        kind = request.agent_id % 4
        if extracting:
            if kind == 1:
                return ChatResult(str(30 + request.round), 20, 1)
            if kind == 2:
                return ChatResult("none of them" if request.round == 1 else "150", 20, 3)
            return ChatResult(None, error="slow", error_kind="timeout")
        if request.agent_id == 3:
            return ChatResult(None, error="down", error_kind="timeout")
        if kind == 0:
            return ChatResult(f"My guess is {10 + request.agent_id + request.round}.", 50, 6)
        return ChatResult(f"Everyone goes lower, so agent {'abc'[kind - 1]} goes low.", 50, 9)


def _replayed(config, bundle, out: Path):
    replay = config.model_copy(update={"model": ModelSpec(kind="replay", bundle=str(bundle.path))})
    return Simulation(replay).run(out_dir=out, progress=False)


def test_replay_reproduces_answers_and_failures(make_config, tmp_path: Path) -> None:
    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=2)
    original = Simulation(config, model=HalfFailingModel()).run(
        out_dir=tmp_path / "a", progress=False
    )
    replayed = _replayed(config, original, tmp_path / "b")
    assert set(original.responses()["status"]) == {"ok", "timeout"}
    assert original.responses()[COLUMNS].equals(replayed.responses()[COLUMNS])
    assert replayed.manifest["model"]["engine"] == "replay"
    assert original.rounds()["mean"].tolist() == replayed.rounds()["mean"].tolist()


def test_replay_reproduces_the_extraction_call(make_config, tmp_path: Path) -> None:
    config = make_config(
        policy={"kind": "llm", "extract_number": True},
        model={"constrained": False},
        n_agents=12,
        rounds=2,
    )
    original = Simulation(config, model=RamblingModel()).run(out_dir=tmp_path / "a", progress=False)
    replayed = _replayed(config, original, tmp_path / "b")
    before, after = original.responses()[COLUMNS], replayed.responses()[COLUMNS]
    assert set(before["status"]) == {"ok", "no_number", "timeout"}
    extracted = before[before["agent_id"] % 4 == 1]
    assert extracted["raw"].str.endswith(("[extracted: 31]", "[extracted: 32]")).all()
    assert (extracted["prompt_tokens"] == 70).all() and (extracted["completion_tokens"] == 10).all()
    unparsed = before[before["agent_id"] % 4 == 2]
    assert (unparsed["status"] == "no_number").all() and (unparsed["prompt_tokens"] == 70).all()
    assert not unparsed["raw"].str.contains("extracted").any()
    assert before.equals(after)
    assert original.rounds()["mean"].tolist() == replayed.rounds()["mean"].tolist()


def test_extraction_marker_round_trip() -> None:
    raw = with_extraction("I go low.\nReally low.", "7")
    assert raw == "I go low.\nReally low.\n[extracted: 7]"
    assert split_extraction(raw) == ("I go low.\nReally low.", "7")
    assert split_extraction("I go low.") == ("I go low.", None)
    assert split_extraction("x\n[extracted: 7") == ("x\n[extracted: 7", None)


@pytest.mark.slow
def test_replay_of_an_embedded_run(make_config, tmp_path: Path) -> None:
    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=2, model={"max_tokens": 4})
    original = Simulation(config).run(out_dir=tmp_path / "a", progress=False)
    replayed = _replayed(config, original, tmp_path / "b")
    assert original.responses()[COLUMNS].equals(replayed.responses()[COLUMNS])


def test_replay_needs_a_readable_bundle(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="kind replay needs bundle"):
        from workbench.config import validate

        validate(ModelSpec, {"kind": "replay"}, "config.yaml")
    with pytest.raises(ModelError, match="model.bundle: cannot replay"):
        make_model(ModelSpec(kind="replay", bundle=str(tmp_path / "missing")))
