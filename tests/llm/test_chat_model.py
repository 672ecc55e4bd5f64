"""The ChatModel contract: identity and generate, plus load/check/close with no-op defaults,
forwarded by the wrappers (cache, mix) and supplied by an adapter for duck-typed models."""

from __future__ import annotations

import asyncio

import pytest

from workbench.errors import ConfigError
from workbench.llm import ChatModel, as_chat_model
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.cache import CachedModel, ResponseCache
from workbench.llm.chat_model import AdaptedModel
from workbench.llm.mix import ModelMix


class Recording(ChatModel):
    """Records which contract methods were called."""

    identity = {"engine": "fake", "name": "recording"}

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def generate(self, requests, params):
        return [ChatResult("7") for _ in requests]

    def load(self) -> Recording:
        self.calls.append("load")
        return self

    async def check(self) -> None:
        self.calls.append("check")

    def close(self) -> None:
        self.calls.append("close")


class DuckModel:
    """Only identity and generate, as a user's own model object may be."""

    identity = {"engine": "duck"}

    async def generate(self, requests, params):
        return [ChatResult("3") for _ in requests]


def test_the_defaults_do_nothing_and_load_returns_the_model() -> None:
    class Minimal(ChatModel):
        identity = {"engine": "minimal"}

        async def generate(self, requests, params):
            return []

    model = Minimal()
    assert model.load() is model
    assert asyncio.run(model.check()) is None
    assert model.close() is None


def test_a_duck_typed_model_is_adapted_and_answers() -> None:
    adapted = as_chat_model(DuckModel())
    assert isinstance(adapted, AdaptedModel) and adapted.identity == {"engine": "duck"}
    request = ChatRequest(({"role": "user", "content": "?"},))
    assert [r.text for r in asyncio.run(adapted.generate([request], SamplingParams()))] == ["3"]
    model = Recording()
    assert as_chat_model(model) is model


def test_an_object_that_is_no_model_is_a_config_error_naming_the_argument() -> None:
    with pytest.raises(ConfigError, match=r"Simulation\(model=...\): str is not a chat model"):
        as_chat_model("gpt", "Simulation(model=...)")


def test_cache_and_mix_forward_the_contract(tmp_path) -> None:
    inner, first, second = Recording(), Recording(), Recording()
    cache_file = tmp_path / "cache.sqlite"
    cached = CachedModel(inner, ResponseCache(cache_file))
    assert not cache_file.exists()  # created by load(), not by building the wrapper
    asyncio.run(cached.check())
    assert not cache_file.exists()  # nor by a check
    cached.load()
    cached.close()
    assert inner.calls == ["check", "load", "close"] and cache_file.is_file()
    mix = ModelMix({"a": (first, SamplingParams()), "b": (second, SamplingParams())})
    mix.load()
    asyncio.run(mix.check())
    mix.close()
    assert first.calls == second.calls == ["load", "check", "close"]


@pytest.mark.parametrize("kind", ["directory", "text"])
def test_a_cache_path_that_is_no_sqlite_file_is_refused(tmp_path, kind) -> None:
    path = tmp_path / "cache"
    if kind == "directory":
        path.mkdir()
    else:
        path.write_text("not a database\n")
    with pytest.raises(ConfigError, match="model.cache"):
        ResponseCache(path)


@pytest.mark.slow
def test_the_openai_client_reports_each_answer_as_it_lands(llm_server) -> None:
    from workbench.llm.base import BatchProgress, OutputConstraint, track_progress
    from workbench.llm.openai_compat import OpenAICompatModel

    model = OpenAICompatModel([llm_server], "smollm2-135m", max_concurrency=1)
    constraint = OutputConstraint(integer_range=(0, 100))
    requests = [
        ChatRequest(({"role": "user", "content": f"Pick a number, {i}."},), seed=i,
                    constraint=constraint)
        for i in range(3)
    ]  # fmt: skip
    seen: list[int] = []

    async def go() -> None:
        progress = BatchProgress()
        with track_progress(progress):
            task = asyncio.ensure_future(model.generate(requests, SamplingParams(max_tokens=3)))
            while not task.done():
                seen.append(progress.snapshot()["answered"])
                await asyncio.sleep(0.02)
            await task
        assert progress.snapshot()["answered"] == 3
        assert progress.snapshot()["prompt_tokens"] > 0

    asyncio.run(go())
    assert any(0 < n < 3 for n in seen), seen  # seen between the first answer and the last
