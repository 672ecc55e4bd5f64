"""A mixed population: each agent asks its own model; statistics per model."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from workbench.errors import ConfigError, ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.mix import ModelMix
from workbench.results import verify_bundle
from workbench.runtime import Simulation


class Constant:
    """Answers one fixed number, and remembers the params it was given."""

    def __init__(self, answer: str) -> None:
        self.answer, self.params = answer, []

    @property
    def identity(self) -> dict:
        return {"engine": "fake", "name": f"constant-{self.answer}"}

    async def generate(self, requests, params):
        self.params.append(params)
        return [ChatResult(self.answer, 3, 1) for _ in requests]


def test_mix_routes_each_request_to_its_model_in_input_order() -> None:
    low, high = Constant("10"), Constant("90")
    mix = ModelMix(
        {"low": (low, SamplingParams(temperature=0.1)), "high": (high, SamplingParams())}
    )
    requests = [
        ChatRequest(({"role": "user", "content": str(i)},), model=m)
        for i, m in enumerate(["low", "high", "high", "low"])
    ]
    answers = asyncio.run(mix.generate(requests, SamplingParams(temperature=1.5)))
    assert [a.text for a in answers] == ["10", "90", "90", "10"]
    assert low.params == [SamplingParams(temperature=0.1)]  # each model's own settings
    assert set(mix.identity["models"]) == {"low", "high"}
    with pytest.raises(ModelError, match="the mix has"):
        asyncio.run(mix.generate([ChatRequest((), model="other")], SamplingParams()))


def _mixed(make_config, **extra):
    config = make_config(policy={"kind": "llm"}, n_agents=9, rounds=2, model={"max_tokens": 4})
    data = config.model_dump(mode="json") | {
        "models": {
            "cold": {"temperature": 0.0, "max_tokens": 4},
            "hot": {"temperature": 1.5, "max_tokens": 4},
            "warm": {"temperature": 0.7, "max_tokens": 4},
        },
        "model_shares": {"cold": "1/3", "hot": "1/3", "warm": "1/3"},
        **extra,
    }
    data["game"].pop("group_by", None)
    return type(config).model_validate(data)


@pytest.mark.slow
def test_mixed_population_on_the_embedded_model(make_config, tmp_path: Path) -> None:
    config = _mixed(make_config)
    assert config.game.group_by == "model"
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    personas = bundle.personas()
    assert personas["model"].value_counts().to_dict() == {"cold": 3, "hot": 3, "warm": 3}
    groups = bundle.groups()
    assert sorted(groups["group"].unique()) == ["cold", "hot", "warm"]
    assert (groups.groupby("round")["n"].sum() == 9).all()
    assert set(bundle.manifest["model"]["models"]) == {"cold", "hot", "warm"}
    assert verify_bundle(bundle.path).ok


def test_model_shares_must_cover_the_models(make_config) -> None:
    with pytest.raises(ConfigError, match="model_shares must give a share"):
        from workbench.config import validate

        data = _mixed(make_config).model_dump(mode="json")
        data["model_shares"] = {"cold": 1.0}
        validate(type(_mixed(make_config)), data, "mixed.yaml")
