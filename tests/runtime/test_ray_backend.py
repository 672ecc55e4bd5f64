"""The Ray backend on a two-node cluster on this machine (one session-wide `ray_cluster`).

Ray and local runs give the same responses for a seed; shards spread over both nodes; one
agent per actor works; a shard actor killed mid-round is respawned and its round replayed with
every agent answering once; bad backend settings fail fast and write nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest
import yaml

from workbench.agents.shard import RoundContext
from workbench.config import BackendSpec, RunConfig, save_yaml, validate
from workbench.errors import ConfigError
from workbench.results import Bundle, verify_bundle
from workbench.runtime import Simulation
from workbench.runtime.ray_backend import LOOPBACK_SWITCH, RayBackend, check_address

LEVEL_K = {"kind": "level_k", "noise_sd": 2.0, "depth_shares": {0: 0.2, 1: 0.4, 2: 0.4}}
UNREACHABLE = "127.0.0.1:1"  # nothing listens on port 1: connections are refused at once


def on_ray(config: RunConfig, cluster, **backend) -> RunConfig:
    """`config` on the test cluster's Ray backend (`backend` sets the shard sizing)."""
    spec = validate(BackendSpec, {"kind": "ray", "address": cluster.address, **backend}, "backend")
    return config.model_copy(update={"backend": spec})


def timeless(bundle: Bundle) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A bundle's responses and rounds without the columns that measure time."""
    return bundle.responses().drop(columns="latency_s"), bundle.rounds().drop(columns="seconds")


def assert_same_results(one: Bundle, two: Bundle) -> None:
    for left, right in zip(timeless(one), timeless(two), strict=True):
        pd.testing.assert_frame_equal(left, right)


def assert_complete(bundle: Bundle, n_agents: int, rounds: int) -> None:
    """Complete and verified, every round answered once by every agent."""
    assert bundle.is_complete, bundle.manifest.get("error")
    report = verify_bundle(bundle.path)
    assert report.ok, str(report)
    frame = bundle.responses()
    assert len(frame) == n_agents * rounds
    for number, ids in frame.groupby("round")["agent_id"]:
        assert sorted(ids) == list(range(n_agents)), f"round {number}"
    assert bundle.rounds()["n"].tolist() == [n_agents] * rounds


def node_ids(cluster) -> set[str]:
    return {node.node_id for node in cluster.list_all_nodes()}


class PlacementProbe(RayBackend):
    """A RayBackend that records where its actors run as soon as they have started."""

    places: list[dict]

    async def start(self, shards) -> None:
        await super().start(shards)
        self.places = await self.placement()


# --------------------------------------------------------------------------- same results
# Every actor is a new worker process that imports pandas and pyarrow (seconds each on a busy
# two-core machine), so these tests start as few actors as they can.


@pytest.mark.ray
def test_ray_gives_the_local_results_for_the_same_seed_random(ray_cluster, make_config, tmp_path):
    sim = Simulation(make_config(policy={"kind": "random"}, n_agents=12, rounds=3, seed=11))
    distributed = sim.to_dist(ray_cluster.address, shards_per_node=1)
    assert distributed.config.backend.kind == "ray"
    assert distributed.config.backend.shards_per_node == 1
    local = sim.run(out_dir=tmp_path / "local", progress=False)
    bundle = distributed.run(out_dir=tmp_path / "ray", progress=False)

    assert_complete(bundle, 12, 3)
    assert_same_results(local, bundle)
    assert len(bundle.response_files(1)) == 2  # one shard a node, two nodes
    assert bundle.manifest["backend"] == {
        "kind": "ray",
        "shards": 2,
        "nodes": 2,
        "address": ray_cluster.address,
        "restarts": 0,
    }


@pytest.mark.ray
def test_ray_gives_the_local_results_for_the_same_seed_level_k(ray_cluster, make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=12, rounds=3, seed=11)
    local = Simulation(config).run(out_dir=tmp_path / "local", progress=False)
    ray_config = on_ray(config, ray_cluster, agents_per_actor=6)
    probe = PlacementProbe(ray_config)
    bundle = Simulation(ray_config, backend=probe).run(out_dir=tmp_path / "ray", progress=False)

    assert_complete(bundle, 12, 3)
    assert_same_results(local, bundle)
    assert [(p["shard"], p["agents"]) for p in probe.places] == [(0, 6), (1, 6)]
    assert {p["node_id"] for p in probe.places} == node_ids(ray_cluster)
    assert probe.actors == []  # the run's actors are gone once it ends


# --------------------------------------------------------------------------- placement


@pytest.mark.ray
def test_one_agent_per_actor_spreads_over_both_nodes_and_completes(
    ray_cluster, make_config, tmp_path
):
    config = make_config(policy=LEVEL_K, n_agents=6, rounds=2, seed=3)
    local = Simulation(config).run(out_dir=tmp_path / "local", progress=False)
    ray_config = on_ray(config, ray_cluster, agents_per_actor=1)
    probe = PlacementProbe(ray_config)
    bundle = Simulation(ray_config, backend=probe).run(out_dir=tmp_path / "ray", progress=False)

    assert_complete(bundle, 6, 2)
    assert_same_results(local, bundle)
    assert bundle.manifest["backend"]["shards"] == 6
    assert len(bundle.response_files(2)) == 6
    assert [p["shard"] for p in probe.places] == list(range(6))
    assert [p["agents"] for p in probe.places] == [1] * 6
    assert len({p["pid"] for p in probe.places}) == 6  # six actor processes
    nodes = sorted(node_ids(ray_cluster))
    # round-robin over the sorted node ids: shards 0, 2, 4 on one node, 1, 3, 5 on the other
    assert [p["node_id"] for p in probe.places] == nodes * 3


# --------------------------------------------------------------------------- a killed actor


class KillingBackend(RayBackend):
    """Kills shard 0's actor process with SIGKILL `after_s` into round `kill_round`."""

    def __init__(self, config: RunConfig, *, kill_round: int, after_s: float) -> None:
        super().__init__(config, max_restarts=config.backend.max_restarts)
        self.kill_round, self.after_s = kill_round, after_s
        self.killed: dict | None = None
        self._killer: asyncio.Task | None = None

    async def play_round(self, ctx: RoundContext, emit=None):
        if ctx.round == self.kill_round:
            self._killer = asyncio.create_task(self._kill(self.actors[0]))
        tables = await super().play_round(ctx, emit)
        if self._killer is not None:
            await self._killer
        return tables

    async def _kill(self, actor) -> None:
        where = await actor.where.remote()  # answered at once: the round only sleeps
        await asyncio.sleep(self.after_s)
        os.kill(where["pid"], signal.SIGKILL)
        self.killed = where


@pytest.mark.ray
def test_a_shard_killed_mid_round_is_respawned_and_every_agent_answers_once(
    ray_cluster, make_config, tmp_path
):
    policy = {"kind": "random", "latency_s": 1.5}
    config = make_config(policy=policy, n_agents=8, rounds=2, seed=21)
    ray_config = on_ray(config, ray_cluster, shards_per_node=1)
    backend = KillingBackend(ray_config, kill_round=2, after_s=0.5)
    sim = Simulation(ray_config, backend=backend)

    async def run_as_task() -> Bundle:
        task = asyncio.create_task(sim.arun(out_dir=tmp_path / "ray", progress=False))
        return await asyncio.wait_for(task, timeout=90)

    bundle = asyncio.run(run_as_task())
    assert backend.killed is not None  # the kill really happened, mid-round 2
    assert backend.restarts >= 1
    assert bundle.manifest["backend"]["restarts"] == backend.restarts
    assert_complete(bundle, 8, 2)
    frame = bundle.responses()
    assert not frame.duplicated(["round", "agent_id"]).any()
    local = Simulation(config).run(out_dir=tmp_path / "local", progress=False)
    assert_same_results(local, bundle)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("key", ["agents_per_actor", "agents_per_shard"])
@pytest.mark.parametrize("value", [0, -2])
def test_a_shard_size_below_one_is_a_config_error(key, value, make_config, tmp_path):
    data = make_config().model_dump(mode="json")
    data["backend"] = {"kind": "ray", key: value}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=rf"backend\.{key}: must be at least 1, got {value}"):
        Simulation.from_yaml(path).run(out_dir=tmp_path / "out", progress=False)
    with pytest.raises(ConfigError, match=rf"backend: agents_per_actor: .*got {value}"):
        Simulation(make_config()).to_dist(agents_per_actor=value)
    assert [p.name for p in tmp_path.iterdir()] == ["run.yaml"]


@pytest.mark.ray
def test_more_shards_than_agents_is_a_config_error_before_writing(
    ray_cluster, make_config, tmp_path
):
    config = on_ray(make_config(n_agents=3), ray_cluster, shards_per_node=2)  # 4 shards
    with pytest.raises(ConfigError, match=r"backend\.shards_per_node: 4 shards for 3 agents"):
        Simulation(config).run(out_dir=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_an_unreachable_address_is_refused_in_seconds():
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"backend\.address: cannot reach .*127\.0\.0\.1:1"):
        check_address(UNREACHABLE)
    with pytest.raises(ConfigError, match=r"backend\.address: .*expected host:port"):
        check_address("ray://no-port")
    assert time.perf_counter() - start < 10


@pytest.mark.ray
def test_an_unreachable_address_fails_fast_while_connected_elsewhere(
    ray_cluster, make_config, tmp_path
):
    config = make_config().model_copy(
        update={"backend": BackendSpec(kind="ray", address=UNREACHABLE)}
    )
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"backend\.address: cannot reach a Ray cluster"):
        Simulation(config).run(out_dir=tmp_path / "out", progress=False)
    assert time.perf_counter() - start < 10
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_an_unreachable_address_fails_fast_in_a_fresh_process(make_config, tmp_path):
    config = make_config().model_copy(
        update={"backend": BackendSpec(kind="ray", address=UNREACHABLE)}
    )
    path = save_yaml(config, tmp_path / "run.yaml")
    script = textwrap.dedent(
        f"""
        from workbench.errors import ConfigError
        from workbench.runtime import Simulation
        try:
            Simulation.from_yaml({str(path)!r}).run(out_dir={str(tmp_path / "out")!r})
        except ConfigError as exc:
            print(exc)
        """
    )
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if k != LOOPBACK_SWITCH},  # as a user has it
    )
    assert result.returncode == 0, result.stderr
    assert "backend.address: cannot reach a Ray cluster at '127.0.0.1:1'" in result.stdout
    assert time.perf_counter() - start < 60  # imports included; ray.init alone would hang
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_shard_actors_share_an_openai_compatible_server(
    ray_cluster, llm_server, make_config, tmp_path
):
    """Every shard actor reaches the same real server; every answer is a valid number."""
    model = {"kind": "openai", "base_urls": [llm_server], "name": "smollm2-135m", "max_tokens": 4}
    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=2, model=model)
    distributed = Simulation(on_ray(config, ray_cluster, shards_per_node=1)).run(
        out_dir=tmp_path / "ray", progress=False
    )
    assert distributed.manifest["backend"]["shards"] == 2
    assert distributed.manifest["model"]["engine"] == "openai-compatible"
    responses = distributed.responses()
    assert len(responses) == 16 and (responses["status"] == "ok").all()
    assert (responses["prompt_tokens"] > 0).all()  # answered by the server, in both actors
    assert verify_bundle(distributed.path).ok
