"""The response cache: identical reruns make no model calls and give identical answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.cache import CachedModel, ResponseCache, request_key
from workbench.runtime import Simulation


class CountingModel:
    """Answers with the request's seed; fails for odd seeds when `fail_odd`."""

    def __init__(self, fail_odd: bool = False) -> None:
        self.calls = 0
        self.fail_odd = fail_odd

    @property
    def identity(self) -> dict:
        return {"engine": "counting", "name": "c", "n_threads": 3}

    async def generate(self, requests, params):
        self.calls += len(requests)
        return [
            ChatResult(None, error="boom", error_kind="model_error")
            if self.fail_odd and r.seed % 2
            else ChatResult(str(r.seed % 101), prompt_tokens=5, completion_tokens=1)
            for r in requests
        ]


def _requests(n: int) -> list[ChatRequest]:
    return [ChatRequest(({"role": "user", "content": "pick"},), seed=s) for s in range(n)]


def test_key_changes_with_anything_that_changes_the_answer() -> None:
    identity, request, params = {"name": "m"}, _requests(1)[0], SamplingParams()
    base = request_key(identity, request, params)
    assert base == request_key({"name": "m", "n_threads": 8}, request, params)
    assert base != request_key({"name": "other"}, request, params)
    assert base != request_key(identity, _requests(2)[1], params)
    assert base != request_key(identity, request, SamplingParams(temperature=0.1))


def test_second_call_is_answered_from_the_cache(tmp_path: Path) -> None:
    inner = CountingModel()
    model = CachedModel(inner, ResponseCache(tmp_path / "cache.sqlite"))
    first = asyncio.run(model.generate(_requests(6), SamplingParams()))
    second = asyncio.run(model.generate(_requests(6), SamplingParams()))
    assert inner.calls == 6
    assert [r.text for r in first] == [r.text for r in second]
    assert all(r.extra.get("cached") for r in second)


def test_failures_are_not_cached(tmp_path: Path) -> None:
    inner = CountingModel(fail_odd=True)
    model = CachedModel(inner, ResponseCache(tmp_path / "cache.sqlite"))
    asyncio.run(model.generate(_requests(4), SamplingParams()))
    asyncio.run(model.generate(_requests(4), SamplingParams()))
    assert inner.calls == 4 + 2  # the two failed requests were asked again
    assert len(model.cache) == 2


@pytest.mark.slow
def test_cached_rerun_on_the_embedded_model_makes_zero_calls(make_config, tmp_path: Path) -> None:
    config = make_config(
        policy={"kind": "llm"},
        n_agents=6,
        rounds=2,
        model={"max_tokens": 4, "cache": str(tmp_path / "responses.sqlite")},
    )
    first = Simulation(config)
    bundle_a = first.run(out_dir=tmp_path / "a", progress=False)
    nodes = first.model.model.counters.nodes  # distribution mode: the trie nodes scored
    assert first.model.calls == nodes > 0
    second = Simulation(config)
    bundle_b = second.run(out_dir=tmp_path / "b", progress=False)
    assert second.model.calls == 0
    assert second.model.model.counters.nodes == 0
    columns = ["agent_id", "round", "guess", "status", "raw"]
    assert bundle_a.responses()[columns].equals(bundle_b.responses()[columns])


@pytest.mark.slow
def test_cached_rerun_per_agent_makes_zero_calls(make_config, tmp_path: Path) -> None:
    """With the model's own sampler (one generation per agent) the cache holds answers."""
    config = make_config(
        policy={"kind": "llm"},
        n_agents=6,
        rounds=2,
        model={"max_tokens": 4, "sampling": "server", "cache": str(tmp_path / "r.sqlite")},
    )
    first = Simulation(config)
    first.run(out_dir=tmp_path / "a", progress=False)
    assert first.model.calls == 12
    second = Simulation(config)
    second.run(out_dir=tmp_path / "b", progress=False)
    assert second.model.calls == 0
