"""A Ray run's bundle with the work of its two model engines, written by hand (no Ray, no model):
`bundles show`, `runs follow` and the Cluster tab are tested on it.

Engine work is plain manifest data (`BundleWriter.record_engine_work`) and an `engine_work`
event per round, as `Simulation` writes them; the events are the run's own (started, each
shard's progress on its node, each round's engine work and statistics, finished). The numbers
(ENGINE_WORK) are chosen so every sum and share is known: round 1 walks one prompt on one
engine, rounds 2 and 3 split their prompts 41/40 and 60/40.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from run_configs import HALVES, run_config

from workbench.game import round_stats
from workbench.results import BundleWriter
from workbench.results.engine_table import ENGINE_SUMS
from workbench.runtime.events import (
    EngineWork,
    RoundFinished,
    RunFinished,
    RunStarted,
    ShardProgress,
    ShardState,
)

NODES = ("a3f91c07" + "0" * 48, "5be2d4a8" + "1" * 48)
"""The two Ray node ids the engines (and shards) ran on: engine i on NODES[i]."""

AGENTS = 200
"""Agents of the run: two shards of 100, one per node."""

ENGINE_WORK: dict[int, list[tuple[int, int, int, int, int, float]]] = {
    1: [(1, 130, 5, 5, 200, 0.4), (0, 0, 0, 0, 0, 0.0)],
    2: [(41, 9_812, 230, 260, 102, 3.1), (40, 9_700, 228, 250, 98, 3.0)],
    3: [(60, 15_000, 400, 420, 120, 5.5), (40, 10_000, 300, 310, 80, 3.5)],
}
"""Per round, per engine: `ENGINE_SUMS` (prompts, prompt tokens, nodes scored, visits, agents,
seconds)."""


def engine_rows(round_number: int, nodes: tuple[str, ...] = NODES) -> list[dict[str, Any]]:
    """Round `round_number`'s engine work as the driver records it (ENGINE_WORK_FIELDS)."""
    return [
        {"round": round_number, "engine": engine, "node": nodes[engine]}
        | dict(zip(ENGINE_SUMS, work, strict=True))
        for engine, work in enumerate(ENGINE_WORK[round_number])
    ]


def write_engine_bundle(
    root: Path, run_id: str = "ray-run", *, nodes: tuple[str, ...] = NODES
) -> Path:
    """The bundle (see the module) under `root`: three rounds of random guesses, shard i and
    engine i on `nodes[i]`, complete."""
    config = run_config(
        HALVES,
        rounds=len(ENGINE_WORK),
        name=run_id,
        seed=4,
        n_agents=AGENTS,
        agents_per_shard=AGENTS // 2,
        policy={"kind": "random"},
    )
    rng = np.random.default_rng(4)
    writer = BundleWriter(root, config, run_id=run_id)
    emit = writer.append_event
    emit(
        RunStarted(
            run_id=run_id,
            bundle=str(writer.path),
            config={},
            rounds=config.game.rounds,
            n_agents=AGENTS,
            backend="ray",
        ).to_dict()
    )
    ids = np.arange(AGENTS)
    writer.write_personas(pd.DataFrame({"agent_id": ids, "gender": ["male", "female"] * 100}))
    for number in ENGINE_WORK:
        guesses = rng.integers(0, 101, AGENTS).astype(float)
        for shard, node in enumerate(nodes):
            part = slice(shard * 100, shard * 100 + 100)
            frame = pd.DataFrame({"agent_id": ids[part], "guess": guesses[part], "status": "ok"})
            writer.write_responses(number, shard, frame)
            done = ShardProgress(
                run_id=run_id,
                round=number,
                shard=shard,
                agents=100,
                answered=100,
                state=ShardState.DONE,
                node=node,
                pid=1000 + shard,
                seconds=1.0,
            )
            emit(done.to_dict())
        work = engine_rows(number, nodes)
        writer.record_engine_work(number, work)
        emit(EngineWork(run_id=run_id, round=number, engines=work).to_dict())
        stats = round_stats(guesses, np.ones(AGENTS, dtype=bool), config.game).as_dict()
        writer.end_round({"round": number, **stats, "seconds": 1.0})
        emit(RoundFinished(run_id=run_id, round=number, stats=stats).to_dict())
    last = RunFinished(
        run_id=run_id, status="complete", rounds_done=len(ENGINE_WORK), bundle=str(writer.path)
    )
    writer.finish(event=last.to_dict())
    return writer.path
