"""A cluster that divides the work (issue 38): each round's plan executed on Ray's model actors.

Every shard reports its distinct prompts, the driver plans (`cluster_plan.plan_round`), each
shard's prompts go to their planned engines (`llm.routes.Routes`), and each engine's work is on
the record (the bundle's `engine_work`, the events). Answers are the local backend's, on the
session's real two-node cluster with the embedded model: here with a shard killed once its round
is planned; tests/test_bench_cluster.py runs the plan as `bench cluster --ray` does and checks
each engine's record against the plan.
"""

from __future__ import annotations

import os
import signal

import pandas as pd
import pytest

from workbench.llm.base import ChatRequest
from workbench.llm.routes import Routes, request_key
from workbench.runtime import Simulation
from workbench.runtime.cluster_plan import plan_round, shard_routes
from workbench.runtime.ray_backend import RayBackend

from .test_model_placement import llm_config, on_ray


def chat(text: str) -> ChatRequest:
    return ChatRequest(({"role": "user", "content": text},))


def test_routes_send_planned_prompts_to_their_engine_and_others_by_their_key() -> None:
    planned = chat("planned")
    routes = Routes((1, 3), {request_key(planned): 3})
    assert routes.engine_of(planned) == 3
    others = [chat(f"extraction {i}") for i in range(40)]
    picked = [routes.engine_of(c) for c in others]
    assert set(picked) == {1, 3}  # only the engines in use, both of them
    assert picked == [Routes((1, 3)).engine_of(c) for c in others]  # the key alone decides
    split = routes.split([planned, *others])
    assert split[3][0] == 0 and sorted(i for where in split.values() for i in where) == list(
        range(41)
    )
    with pytest.raises(ValueError, match="at least one engine"):
        Routes(())


def test_each_shard_gets_the_plan_for_its_own_prompts_on_the_engines_alive() -> None:
    rows = pd.DataFrame(
        [
            (0, "a", ("p1",), 10, 3),
            (1, "a", ("p1",), 10, 2),
            (1, "b", ("p2",), 12, 1),
            (2, "c", ("p3",), 11, 4),
        ],
        columns=["shard", "key", "path", "tokens", "agents"],
    )
    plan = plan_round(rows, 2)
    routes = shard_routes(plan, rows, [0, 2])  # engine 1 is gone: plan engine i is [0, 2][i]
    assert sorted(routes) == [0, 1, 2]
    assert set(routes[1].planned) == {"a", "b"} and set(routes[0].planned) == {"a"}
    assert routes[0].planned["a"] == routes[1].planned["a"]  # one engine for a shared prompt
    assert {e for r in routes.values() for e in r.planned.values()} == {0, 2}
    assert all(r.engines == (0, 2) for r in routes.values())


class KilledAfterThePlan(RayBackend):
    """Kills shard 0's actor process once round 2 is planned, before it plays: its respawned
    actor must replay the round with its part of the same plan."""

    killed: dict | None = None

    async def _plan(self, ctx):
        where = await self.actors[0].where.remote() if ctx.round == 2 else None
        routes = await super()._plan(ctx)
        if where is not None:
            os.kill(where["pid"], signal.SIGKILL)
            self.killed = where
        return routes


@pytest.mark.ray
@pytest.mark.slow
def test_a_shard_killed_after_the_plan_replays_its_part_and_answers_stay_the_local_ones(
    ray_cluster, make_config, tmp_path
):
    model = {"max_tokens": 4, "n_threads": 1}
    config = llm_config(make_config, n_agents=16, rounds=2, model=model, seed=11)
    ray_config = on_ray(config, ray_cluster, shards_per_node=2, model_placement="node")
    backend = KilledAfterThePlan(ray_config)
    bundle = Simulation(ray_config, backend=backend).run(out_dir=tmp_path / "ray", progress=False)
    assert backend.killed is not None and backend.restarts >= 1
    assert 2 in backend.plans
    local = Simulation(config).run(out_dir=tmp_path / "local", progress=False).responses()
    columns = ["agent_id", "round", "guess", "status", "raw"]
    assert local[columns].equals(bundle.responses()[columns])
    round_two = bundle.engine_work().query("round == 2")
    assert round_two["prompts"].sum() == backend.plans[2].distinct_prompts  # still once each
