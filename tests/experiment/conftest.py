"""Sweep fixtures: a small level-k base config, a 2 x 2 x 2 grid, a hook on the runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from workbench.config import RunConfig
from workbench.runtime import Simulation


@pytest.fixture
def grid() -> dict[str, Any]:
    """2 prompts x 2 ratios x 2 seeds: 8 cells."""
    return {
        "grid": {
            "game.prompt.style": ["direct", "step_by_step"],
            "game.ratio": ["2/3", "1/2"],
            "seed": [1, 2],
        }
    }


@pytest.fixture
def level_k_config(make_config: Callable[..., RunConfig]) -> RunConfig:
    """10 level-k agents (fast, no model), 2 rounds, shards of 4."""
    return make_config(policy={"kind": "level_k"})


@pytest.fixture
def hook_runs(monkeypatch: pytest.MonkeyPatch) -> Callable[..., list[int]]:
    """`hook_runs(on_round_of={4: callback})`: count Simulation.arun calls (the returned list
    holds one entry per call) and hand the n-th call `callback` as its on_round."""

    def install(on_round_of: dict[int, Callable[..., None]] | None = None) -> list[int]:
        calls: list[int] = []
        original = Simulation.arun

        async def arun(self: Simulation, **kwargs: Any):
            calls.append(len(calls) + 1)
            callback = (on_round_of or {}).get(len(calls))
            if callback is not None:
                kwargs["on_round"] = callback
            return await original(self, **kwargs)

        monkeypatch.setattr(Simulation, "arun", arun)
        return calls

    return install
