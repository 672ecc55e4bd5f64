"""`workbench bench cluster --ray K`: the config played again on a K-node local Ray cluster.

A Ray cluster of K nodes is started on this machine (loopback, token authentication with a token
held in memory; `ray.cluster_utils.Cluster`, one CPU a node), the config played there with one
model actor a node (`model_placement: node`) and the round's plan executed, and the cluster shut
down. Each round's work per engine is read from the bundle (`Bundle.engine_work`) and the
answers compared with the local run's, agent by agent. K nodes of one machine share its cores,
so these are counts, never a cluster's wall time.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.bench.embedded import on_backend
from workbench.config import RunConfig, validate
from workbench.results import Bundle
from workbench.runtime import Simulation

ANSWER_COLUMNS = ["agent_id", "round", "guess", "status", "raw"]
"""What must be equal, agent by agent, between the local run and the Ray run."""


@dataclass
class RayRun:
    """One K-node Ray run: its shards, each round's work per engine (`ENGINE_WORK_FIELDS`
    rows), each round's seconds, whether every answer equals the local run's, and its bundle."""

    nodes: int
    shards: int
    engines: dict[int, list[dict[str, Any]]]
    seconds: dict[int, float]
    identical: bool
    bundle: str


@contextlib.contextmanager
def local_ray_cluster(k: int) -> Iterator[str]:
    """A K-node Ray cluster on this machine, its address; shut down (with this process's
    connection) on exit. Only this process may join it: loopback, token authentication with
    a token held in memory (`ray_backend.keep_local_token_in_memory`), and the address file
    a bare `ray.init()` would read removed."""
    from workbench.runtime.ray_backend import LOOPBACK_SWITCH, keep_local_token_in_memory

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault(LOOPBACK_SWITCH, "0")  # read when Ray is first imported
    keep_local_token_in_memory()
    import ray
    import ray._private.ray_constants as ray_constants
    from ray._common.utils import get_ray_address_file
    from ray.cluster_utils import Cluster

    ray_constants.ENABLE_RAY_CLUSTER = False  # loopback stays loopback if Ray came in earlier

    node: dict[str, Any] = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        address_file = Path(get_ray_address_file(None))
        if address_file.is_file() and address_file.read_text().strip() == cluster.address:
            address_file.unlink()
        for _ in range(k - 1):
            cluster.add_node(**node)
        cluster.wait_for_nodes()
        yield cluster.address
    finally:
        ray.shutdown()
        cluster.shutdown()


def ray_run(config: RunConfig, address: str, local: Bundle, folder: Path) -> RayRun:
    """`config` played on the Ray cluster at `address` (model actors a node) into `folder`;
    its engines' work per round and its answers against `local`'s."""
    data = on_backend(config, "ray", address).model_dump(mode="json")
    data["backend"]["model_placement"] = "node"
    on_ray = validate(RunConfig, data, "backend (bench cluster --ray)")
    bundle = Simulation(on_ray).run(out_dir=folder, progress=False)
    work = bundle.engine_work()
    engines = {
        int(number): rows.drop(columns="round").to_dict("records")
        for number, rows in work.groupby("round")
    }
    seconds = {int(r["round"]): float(r["seconds"]) for r in bundle.rounds_done}
    ours = bundle.responses()[ANSWER_COLUMNS].reset_index(drop=True)
    theirs = local.responses()[ANSWER_COLUMNS].reset_index(drop=True)
    backend = bundle.manifest.get("backend", {})
    return RayRun(
        int(backend.get("nodes", 0)),
        int(backend.get("shards", 0)),
        engines,
        seconds,
        ours.equals(theirs),
        str(bundle.path),
    )
