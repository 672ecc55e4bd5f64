"""Fixtures for the results tests: a small honest bundle, written by the real writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from run_configs import small_config

from workbench.config import RunConfig
from workbench.results import BundleWriter

GUESSES = {1: [10.0, 20.0, 35.0, 50.0], 2: [5.0, 12.0, 20.0, 33.0]}


def shard(round_number: int, ids: list[int]) -> pd.DataFrame:
    """One shard's responses of one round, every answer ok."""
    guesses = [GUESSES[round_number][i] for i in ids]
    return pd.DataFrame(
        {
            "agent_id": np.array(ids, dtype=np.int64),
            "round": np.full(len(ids), round_number, dtype=np.int32),
            "guess": guesses,
            "status": ["ok"] * len(ids),
            "raw": [str(g) for g in guesses],
            "latency_s": np.full(len(ids), 0.1),
            "prompt_tokens": np.full(len(ids), 50, dtype=np.int32),
            "completion_tokens": np.full(len(ids), 2, dtype=np.int32),
        }
    )


def play(writer: BundleWriter) -> None:
    """Write personas and two honest rounds of two shards each (statistics from game)."""
    from workbench.game.rules import round_stats

    game = small_config().game
    writer.write_personas(pd.DataFrame({"agent_id": range(4), "gender": ["male", "female"] * 2}))
    for r in (1, 2):
        writer.write_responses(r, 0, shard(r, [0, 1]))
        writer.write_responses(r, 1, shard(r, [2, 3]))
        stats = round_stats(np.array(GUESSES[r]), np.ones(4, dtype=bool), game).as_dict()
        writer.end_round({"round": r, **stats, "seconds": 0.01})


@pytest.fixture
def write_honest_bundle() -> Callable[..., Path]:
    """`honest(root, run_id="r1", finish=True)`: the path of a two-round bundle."""

    def build(root: Path, run_id: str = "r1", finish: bool = True) -> Path:
        writer = BundleWriter(root, small_config(), run_id=run_id)
        play(writer)
        if finish:
            writer.finish()
        else:
            writer.close()
        return writer.path

    return build


@pytest.fixture
def config() -> RunConfig:
    """The small run config the results tests write."""
    return small_config()


@pytest.fixture
def play_rounds() -> Callable[[BundleWriter], None]:
    """`play_rounds(writer)`: personas and two honest rounds written through `writer`."""
    return play
