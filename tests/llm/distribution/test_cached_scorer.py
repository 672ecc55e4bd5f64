"""The response cache's node scorer (`llm.distribution.cached_scorer`): a step is scheduled as the
scorer it wraps schedules its own (one call on an engine, a call per walk on a server, the
engine's turns), the answers are the wrapped scorer's, and a rerun scores no node."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

import numpy as np
import pytest
from hash_scorer import SCHEDULES, request

from workbench.agents import streams
from workbench.llm.base import SamplingParams
from workbench.llm.distribution.cached_scorer import CachedScorer
from workbench.llm.distribution.walk import STEP_STREAM, PromptGroup, draw_answers


class DictStore:
    """Node logits kept in a dict (the response cache's `LogitStore` in memory)."""

    def __init__(self) -> None:
        self.rows: dict[str, np.ndarray] = {}

    def get_logits(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return {key: self.rows[key] for key in keys if key in self.rows}

    def put_logits(self, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        self.rows.update(rows)


def uniforms(ids: np.ndarray, depth: int) -> np.ndarray:
    return streams.uniform(7, ids, 1, STEP_STREAM + depth)


@pytest.mark.parametrize("schedule", ["engine", "server"])
def test_the_cache_schedules_as_the_scorer_it_wraps(schedule: str) -> None:
    params = SamplingParams(temperature=1.0, max_tokens=4)
    groups = [PromptGroup(request(f"p{i}"), np.arange(i * 40, i * 40 + 40)) for i in range(6)]
    plain = SCHEDULES[schedule](window=64)
    inner = SCHEDULES[schedule](window=64)
    misses: list[int] = []
    cached = CachedScorer(inner, DictStore(), {"name": "hash"}, misses.append)
    assert cached.window == 64

    async def both() -> tuple[list, list]:
        async with cached.turn():
            if schedule == "engine":  # the wrapped engine's lock, which its other shards wait for
                assert cached.turn() is inner.turn() and inner.turn().locked()
            else:  # a server's walks share it at once
                assert isinstance(cached.turn(), contextlib.nullcontext)
            first = await draw_answers(cached, groups, params, uniforms)
        again = await draw_answers(cached, groups, params, uniforms)
        return first, again

    direct = asyncio.run(draw_answers(plain, groups, params, uniforms))
    first, again = asyncio.run(both())
    for a, b, c in zip(direct, first, again, strict=True):
        assert a.error is None
        assert [a.texts[i] for i in a.leaf] == [b.texts[i] for i in b.leaf]
        assert [a.texts[i] for i in a.leaf] == [c.texts[i] for i in c.leaf]
    assert sorted(inner.scored) == sorted(plain.scored)
    assert sum(misses) == len(inner.scored)  # the rerun scored no node
    assert inner.calls == plain.calls  # the wrapped scorer's schedule, call for call
    if schedule == "engine":
        assert inner.calls <= params.max_tokens  # one call a step for every walk
    else:
        assert inner.calls >= len(groups)  # a call per walk
