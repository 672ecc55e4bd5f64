"""The replay model reproduces a bundle's responses exactly, without any model."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config import ModelSpec
from workbench.errors import ConfigError, ModelError
from workbench.llm import make_model
from workbench.llm.base import ChatResult
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
