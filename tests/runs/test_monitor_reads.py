"""The monitor's reads (`workbench.runs.shards`, `cluster`, `endpoints`, `processes`) on real
parts: the shards of real local and Ray runs read from their events, Ray's nodes and the
workbench's named actors on the two-node test cluster (idle ones shut down), and what a cancel
does to runs it must not signal. Endpoint health: tests/runs/test_endpoints.py."""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from run_configs import run_config

from workbench.config import BackendSpec, RunConfig, validate
from workbench.errors import ConfigError
from workbench.results import Bundle
from workbench.runs import cancelling, cluster, shards
from workbench.runs.cluster import ACTOR_COLUMNS, NODE_COLUMNS
from workbench.runs.endpoints import endpoints
from workbench.runs.processes import process_usage
from workbench.runs.shards import SHARD_COLUMNS
from workbench.runtime import Simulation
from workbench.runtime.ray_backend import NAMESPACE, RayBackend

LEVEL_K = {"kind": "level_k", "noise_sd": 2.0}


@pytest.fixture(scope="module")
def local_run(education_spec, tmp_path_factory) -> Bundle:
    """A complete local level-k run: 12 agents in 3 shards of 4, 2 rounds."""
    config = run_config(
        education_spec, agents_per_shard=4, name="local", seed=3, n_agents=12, policy=LEVEL_K
    )
    root = tmp_path_factory.mktemp("results")
    return Simulation(config).run(out_dir=root, progress=False)


# --------------------------------------------------------------------------- local runs


def test_the_shards_of_a_finished_local_run(local_run):
    frame = shards.shard_actors(local_run.path.parent)

    assert list(frame.columns) == list(SHARD_COLUMNS)
    assert frame["shard"].tolist() == [0, 1, 2]
    assert frame["agents"].tolist() == [4, 4, 4]
    assert set(frame["run_id"]) == {local_run.run_id}
    assert set(frame["run_status"]) == {"complete"}
    assert set(frame["state"]) == {"done"}
    assert frame["round"].tolist() == [2, 2, 2] and frame["rounds_done"].tolist() == [2, 2, 2]
    assert frame["answered"].tolist() == [4, 4, 4]
    assert frame["in_flight"].tolist() == [0, 0, 0] and frame["errors"].tolist() == [0, 0, 0]
    assert set(frame["node"]) == {"local"} and set(frame["address"]) == {socket.gethostname()}
    assert set(frame["pid"]) == {os.getpid()}  # the local backend plays in the writer
    assert frame["cpu_percent"].isna().all()  # not measured once the run has ended
    assert (frame["rss_mb"] > 0).all()  # the memory the shards reported
    assert (frame["answers_per_s"] > 0).all()


def test_the_shards_of_a_running_local_run_are_measured(make_config, tmp_path):
    seen = {}

    def on_round(number, stats, seconds):
        seen[number] = shards.shard_actors(tmp_path)
        seen["running"] = shards.running_runs(tmp_path)
        seen["cancel"] = cancelling.cancel_run(seen["running"]["path"][0])

    config = make_config(name="live", seed=1, n_agents=6, policy=LEVEL_K, agents_per_shard=3)
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False, on_round=on_round)

    assert bundle.is_complete  # a run with no launch record is refused, nothing sent
    assert "no launch record" in seen["cancel"] and "Ctrl-C" in seen["cancel"]
    assert seen["running"]["run_id"].tolist() == [bundle.run_id]
    first = seen[1]
    assert set(first["run_status"]) == {"running"} and first["rounds_done"].tolist() == [1, 1]
    assert (first["cpu_percent"] >= 0).all() and (first["rss_mb"] > 0).all()
    assert shards.running_runs(tmp_path).empty  # complete now
    assert endpoints(tmp_path).empty


def test_cancel_leaves_a_run_it_did_not_launch_alone(local_run):
    said = cancelling.cancel_run(local_run.path)
    assert said.startswith(f"{local_run.path}: not started from this results folder's launcher")


def test_recent_chooses_how_many_finished_runs_show(local_run):
    assert shards.shard_actors(local_run.path.parent, recent=0).empty
    assert shards.shard_actors(local_run.path.parent / "nowhere").empty


# --------------------------------------------------------------------------- Ray


NOT_CONNECTED = """\
import sys
import ray
from workbench.runs import cluster as cd
from workbench.runs.shards import shard_actors
root = sys.argv[1]
assert cd.nodes().empty and list(cd.nodes().columns) == list(cd.NODE_COLUMNS)
assert "not connected" in cd.cluster_summary()
assert cd.named_actors(root).empty and cd.shutdown_idle(root) == []
assert len(shard_actors(root)) == 3
assert not ray.is_initialized()  # nothing above started a cluster
print("ok")
"""


def test_not_connected_means_empty_tables_a_reason_and_no_cluster_started(local_run):
    """In a process that never joined Ray (this one may have: the session's test cluster)."""
    done = subprocess.run(
        [sys.executable, "-c", NOT_CONNECTED, str(local_run.path.parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.ray
def test_nodes_of_the_test_cluster(ray_cluster):
    frame = cluster.nodes()

    assert list(frame.columns) == list(NODE_COLUMNS)
    assert set(frame["node_id"]) == {n.node_id for n in ray_cluster.list_all_nodes()}
    assert frame["alive"].all() and set(frame["address"]) == {"127.0.0.1"}
    assert frame["cpus"].tolist() == [1.0, 1.0]
    assert sorted(frame["gpus"]) == [1.0, 2.0]
    assert (frame["memory_gb"] > 0).all() and (frame["object_store_gb"] > 0).all()
    summary = cluster.cluster_summary()
    assert ray_cluster.address in summary and "2 node(s) alive" in summary
    assert "/3 GPUs free" in summary


@pytest.mark.ray
def test_connect_describes_the_cluster_or_names_the_bad_address(ray_cluster):
    assert cluster.connect(ray_cluster.address) == cluster.cluster_summary()
    with pytest.raises(ConfigError, match=r"ray_address: cannot reach .*'127\.0\.0\.1:1'"):
        cluster.connect("127.0.0.1:1")


class LeftBehind(RayBackend):
    """A Ray backend whose close() leaves the shard actors alive (a clean-up that never ran),
    and that reads the monitor's tables while a round is done and the run still lives."""

    def __init__(self, config: RunConfig, results: Path) -> None:
        super().__init__(config, max_restarts=config.backend.max_restarts)
        self.results = results
        self.during: dict = {}

    async def play_round(self, ctx, emit=None):
        tables = await super().play_round(ctx, emit)
        if ctx.round == 1:
            self.during["shards"] = shards.shard_actors(self.results)
            self.during["actors"] = cluster.named_actors(self.results)
        return tables

    async def close(self) -> None:
        self.left = self.actors
        self.actors = []
        await super().close()


def _wait_gone(run_id: str, timeout_s: float = 20.0) -> list[str]:
    import ray

    deadline = time.monotonic() + timeout_s
    while True:
        names = [
            a["name"]
            for a in ray.util.list_named_actors(all_namespaces=True)
            if a["namespace"] == NAMESPACE and a["name"].startswith(f"{run_id}/")
        ]
        if not names or time.monotonic() > deadline:
            return names
        time.sleep(0.2)


@pytest.mark.ray
def test_a_ray_runs_shards_and_its_idle_actors_shut_down(ray_cluster, make_config, tmp_path):
    import ray

    spec = validate(
        BackendSpec,
        {"kind": "ray", "address": ray_cluster.address, "agents_per_actor": 3},
        "backend",
    )
    config = make_config(policy=LEVEL_K, n_agents=6, rounds=2, seed=4).model_copy(
        update={"backend": spec}
    )
    backend = LeftBehind(config, tmp_path)
    try:
        bundle = Simulation(config, backend=backend).run(out_dir=tmp_path, progress=False)
        assert bundle.is_complete

        during = backend.during["shards"]
        nodes = {n.node_id for n in ray_cluster.list_all_nodes()}
        assert during["shard"].tolist() == [0, 1] and during["agents"].tolist() == [3, 3]
        assert set(during["run_status"]) == {"running"} and set(during["backend"]) == {"ray"}
        assert set(during["node"]) == nodes  # one shard on each node
        assert set(during["address"]) == {"127.0.0.1"}
        assert during["pid"].nunique() == 2 and os.getpid() not in set(during["pid"])
        assert during["cpu_percent"].notna().all()  # actor processes on this host, measured
        assert (during["rss_mb"] > 0).all()
        actors = backend.during["actors"]
        assert list(actors.columns) == list(ACTOR_COLUMNS)
        names = [f"{bundle.run_id}/shard-0", f"{bundle.run_id}/shard-1"]
        assert actors.loc[actors["run_id"] == bundle.run_id, "name"].tolist() == names
        assert not actors["idle"].any()  # its run is running

        after = shards.shard_actors(tmp_path)
        assert set(after["run_status"]) == {"complete"} and after["rounds_done"].tolist() == [2, 2]
        idle = cluster.idle_actors(tmp_path)
        assert idle["name"].tolist() == names and set(idle["run_status"]) == {"complete"}
        assert sorted(cluster.shutdown_idle(tmp_path)) == names
        assert _wait_gone(bundle.run_id) == []
        assert cluster.named_actors(tmp_path).empty
    finally:
        for actor in getattr(backend, "left", []):
            ray.kill(actor)


@pytest.mark.ray
def test_actors_of_runs_elsewhere_are_never_idle(ray_cluster, local_run):
    """A named workbench actor whose run is not in this folder is listed and left alone."""
    import ray

    @ray.remote(num_cpus=0)
    class Sleeper:
        def ping(self) -> str:
            return "pong"

    name = "elsewhere-20260101-000000-abcd/shard-0"
    actor = Sleeper.options(name=name, namespace=NAMESPACE).remote()
    try:
        ray.get(actor.ping.remote(), timeout=60)
        frame = cluster.named_actors(local_run.path.parent)
        row = frame[frame["name"] == name]
        assert row["run_status"].tolist() == ["unknown"] and row["idle"].tolist() == [False]
        assert name not in cluster.shutdown_idle(local_run.path.parent)
    finally:
        ray.kill(actor)


def test_process_usage_of_this_process_and_a_gone_one():
    usage = process_usage(os.getpid())
    assert usage is not None and usage[1] > 0 and not math.isnan(usage[0])
    assert process_usage(2**22 + 12345) is None
