"""The replay model reproduces a bundle's responses exactly, without any model."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import ModelSpec
from workbench.errors import ConfigError, ModelError
from workbench.llm import make_model
from workbench.llm.base import ChatResult, split_extraction, with_extraction
from workbench.runtime import Simulation

COLUMNS = [
    "agent_id",
    "round",
    "guess",
    "status",
    "raw",
    "prompt_tokens",
    "completion_tokens",
    "extracted",
]


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
    """Free-form answers with stray numbers; the extraction call tells each agent's number.

    By agent id mod 4: 0 states its answer ("My guess is n.") and its extraction says n; 1
    rambles and its extraction parses; 2 rambles and its extraction has no number (round 1) or
    is out of range (round 2); 3 rambles and its extraction times out. Agent 3's answers time out.
    """

    identity = {"engine": "fake", "name": "rambling"}

    async def generate(self, requests, params):
        return [self._answer(r) for r in requests]

    @staticmethod
    def _answer(request) -> ChatResult:
        extracting = request.messages[-1]["content"].startswith("Here is a player's answer")
        assert request.step == ("extract" if extracting else "answer")
        kind, stated = request.agent_id % 4, 10 + request.agent_id + request.round
        if extracting:
            if kind == 0:
                return ChatResult(str(stated), 20, 1)
            if kind == 1:
                return ChatResult(str(30 + request.round), 20, 1)
            if kind == 2:
                return ChatResult("none of them" if request.round == 1 else "150", 20, 3)
            return ChatResult(None, error="slow", error_kind="timeout")
        if request.agent_id == 3:
            return ChatResult(None, error="down", error_kind="timeout")
        if kind == 0:
            return ChatResult(f"Two thirds of 60 is 40. My guess is {stated}.", 50, 6)
        return ChatResult(
            f"Half of the 2/3 of 50 is 17, so agent {'abc'[kind - 1]} goes low.", 50, 9
        )


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


def _rambling_run(make_config, tmp_path: Path, extract_number: str):
    """A two-round run of RamblingModel's 12 agents, and its replay: (stored, replayed)."""
    config = make_config(
        policy={"kind": "llm", "extract_number": extract_number},
        model={"constrained": False},
        n_agents=12,
        rounds=2,
    )
    original = Simulation(config, model=RamblingModel()).run(out_dir=tmp_path / "a", progress=False)
    replayed = _replayed(config, original, tmp_path / "b")
    assert original.rounds()["mean"].tolist() == replayed.rounds()["mean"].tolist()
    return original.responses()[COLUMNS], replayed.responses()[COLUMNS]


def test_replay_reproduces_the_fallback_extraction_call(make_config, tmp_path: Path) -> None:
    before, after = _rambling_run(make_config, tmp_path, "fallback")
    kind = before["agent_id"] % 4
    stated = before[kind == 0]  # a stated answer: no extraction, the stray 40 never taken
    assert (stated["guess"] == 10 + stated["agent_id"] + stated["round"]).all()
    assert not stated["extracted"].any() and (stated["prompt_tokens"] == 50).all()
    rambled = before[kind == 1]  # stray numbers (2/3, 50, 17) only: the extraction decides
    assert rambled["extracted"].all() and rambled["guess"].tolist() == [31, 31, 31, 32, 32, 32]
    assert rambled["raw"].str.endswith(("[extracted: 31]", "[extracted: 32]")).all()
    assert (rambled["prompt_tokens"] == 70).all() and (rambled["completion_tokens"] == 10).all()
    unparsed = before[kind == 2]  # the extraction's status is the agent's
    statuses = unparsed.groupby("round")["status"].agg(set).to_dict()
    assert statuses == {1: {"no_number"}, 2: {"out_of_range"}}
    assert unparsed["raw"].str.contains(r"\[extracted: (?:none of them|150)\]").all()
    slow = before[(kind == 3) & (before["agent_id"] != 3)]
    assert (slow["status"] == "timeout").all() and slow["extracted"].all()
    assert slow["raw"].str.endswith("[extracted: slow]").all()
    down = before[before["agent_id"] == 3]  # a failed answer is never sent to extraction
    assert (down["raw"] == "down").all() and not down["extracted"].any()
    assert before.equals(after)


def test_replay_reproduces_always_extracting(make_config, tmp_path: Path) -> None:
    before, after = _rambling_run(make_config, tmp_path, "always")
    answered = before["agent_id"] != 3
    assert before.loc[answered, "extracted"].all() and not before.loc[~answered, "extracted"].any()
    assert before.loc[answered, "raw"].str.contains(r"\n\[extracted: ").all()
    stated = before[before["agent_id"] % 4 == 0]
    assert (stated["prompt_tokens"] == 70).all() and (stated["status"] == "ok").all()
    assert set(before["status"]) == {"ok", "no_number", "out_of_range", "timeout"}
    assert before.equals(after)


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
