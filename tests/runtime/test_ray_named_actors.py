"""Shard actors are named after their run in the "workbench" namespace (the cluster monitor
lists them through Ray's public API): a respawned shard takes its name back, two runs at once
keep their own names, and the names are gone once a run ends."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
import ray

from workbench.agents.shard import RoundContext
from workbench.config import BackendSpec, RunConfig, validate
from workbench.runtime import Simulation
from workbench.runtime.ray_backend import NAMESPACE, RayBackend, actor_name, parse_actor_name

LEVEL_K = {"kind": "level_k", "noise_sd": 2.0}


def on_ray(config: RunConfig, cluster, **backend) -> RunConfig:
    spec = validate(BackendSpec, {"kind": "ray", "address": cluster.address, **backend}, "backend")
    return config.model_copy(update={"backend": spec})


def names_of(run_id: str) -> list[str]:
    """The names of `run_id`'s actors that Ray lists now, sorted."""
    listed = ray.util.list_named_actors(all_namespaces=True)
    return sorted(
        a["name"]
        for a in listed
        if a["namespace"] == NAMESPACE and (parse_actor_name(a["name"]) or ("",))[0] == run_id
    )


class NameProbe(RayBackend):
    """Records its run's actor names after start and after every round; with `kill_round`,
    SIGKILLs shard 0's process half a second into that round (so it is respawned)."""

    def __init__(self, config: RunConfig, kill_round: int | None = None) -> None:
        super().__init__(config, max_restarts=config.backend.max_restarts)
        self.kill_round = kill_round
        self.seen: list[list[str]] = []

    async def start(self, shards) -> None:
        await super().start(shards)
        self.seen.append(names_of(str(self.run_id)))

    async def play_round(self, ctx: RoundContext, emit=None):
        killer = None
        if ctx.round == self.kill_round:
            killer = asyncio.create_task(self._kill(self.actors[0]))
        tables = await super().play_round(ctx, emit)
        if killer is not None:
            await killer
        self.seen.append(names_of(str(self.run_id)))
        return tables

    async def _kill(self, actor) -> None:
        where = await actor.where.remote()
        await asyncio.sleep(0.5)
        os.kill(where["pid"], signal.SIGKILL)


def test_actor_names_round_trip():
    assert actor_name("run-1", 3) == "run-1/shard-3"
    assert parse_actor_name("run-1/shard-3") == ("run-1", 3)
    assert parse_actor_name("a/b/shard-12.r0f3a2c") == ("a/b", 12)
    assert parse_actor_name("someone-elses-actor") is None
    assert parse_actor_name("run/shard-x") is None


@pytest.mark.ray
def test_shard_actors_are_named_after_the_run_and_a_respawn_takes_its_name_back(
    ray_cluster, make_config, tmp_path
):
    policy = {"kind": "random", "latency_s": 1.5}
    config = on_ray(
        make_config(policy=policy, n_agents=8, rounds=2, seed=5), ray_cluster, shards_per_node=1
    )
    backend = NameProbe(config, kill_round=2)
    bundle = Simulation(config, backend=backend).run(out_dir=tmp_path, progress=False)

    assert bundle.is_complete, bundle.manifest.get("error")
    assert backend.run_id == bundle.run_id
    assert backend.restarts >= 1
    named = [f"{bundle.run_id}/shard-0", f"{bundle.run_id}/shard-1"]
    assert backend.seen[0] == named  # after start
    assert backend.seen[1] == named  # after round 1
    assert backend.seen[2] == named  # after round 2: shard 0 respawned under its own name
    assert names_of(bundle.run_id) == []  # the run's actors are gone once it ends


@pytest.mark.ray
def test_two_runs_at_once_keep_their_own_names(ray_cluster, make_config, tmp_path):
    configs = [
        on_ray(
            make_config(policy=LEVEL_K, n_agents=6, rounds=1, seed=s),
            ray_cluster,
            agents_per_actor=3,
        )
        for s in (1, 2)
    ]
    probes = [NameProbe(c) for c in configs]

    async def both():
        sims = [Simulation(c, backend=p) for c, p in zip(configs, probes, strict=True)]
        return await asyncio.gather(
            *(s.arun(out_dir=tmp_path / str(i), progress=False) for i, s in enumerate(sims))
        )

    bundles = asyncio.run(both())
    assert all(b.is_complete for b in bundles)
    assert bundles[0].run_id != bundles[1].run_id
    for bundle, probe in zip(bundles, probes, strict=True):
        assert probe.seen[0] == [f"{bundle.run_id}/shard-0", f"{bundle.run_id}/shard-1"]
        assert names_of(bundle.run_id) == []
