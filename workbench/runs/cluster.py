"""The Ray cluster as the monitor reads it: connect, a one-line summary, its nodes, and the
workbench's named shard actors (and which are idle: their run has ended), with a way to free
those.

Every function that asks Ray first checks that this process is connected: Ray's public calls
start a local cluster when none is, and a monitor must never do that. Calls block: a page calls
them in a worker thread. No Panel here.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from workbench._net import LOOPBACK_NAMES
from workbench.errors import ConfigError, WorkbenchError
from workbench.results import Bundle
from workbench.results.run_statuses import UNKNOWN, RunStatus

__all__ = [
    "ACTOR_COLUMNS",
    "NODE_COLUMNS",
    "cluster_summary",
    "connect",
    "idle_actors",
    "is_connected",
    "named_actors",
    "node_addresses",
    "nodes",
    "shutdown_idle",
    "this_host_addresses",
]

NODE_COLUMNS: tuple[str, ...] = tuple(
    "node_id address hostname alive cpus gpus memory_gb object_store_gb".split()
)
"""Columns of `nodes()`: one row per Ray node (sizes are what the node declares)."""

ACTOR_COLUMNS: tuple[str, ...] = ("name", "run_id", "shard", "run_status", "idle")
"""Columns of `named_actors()`: the workbench's named Ray actors and whether they are idle."""

GB = 1024**3


def _ray_if_connected() -> Any | None:
    """The ray module when this process is connected to a cluster; None otherwise (never
    imports Ray just to ask, never starts a cluster)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return ray


def is_connected() -> bool:
    """Whether this process is connected to a Ray cluster."""
    return _ray_if_connected() is not None


def connect(address: str) -> str:
    """Connect this process to the running Ray cluster at `address` (host:port, or "auto" for
    the one `ray start` left on this machine); returns `cluster_summary()`.

    An address that does not answer fails in seconds with a ConfigError naming it; so does a
    different cluster when this process is already connected to one (Ray joins one cluster per
    process: restart the dashboard to watch another).
    """
    from workbench.runtime.ray_backend import check_address

    check_address(address, field="ray_address")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # as a Ray run imports it
    import ray

    if ray.is_initialized():
        current = ray.get_runtime_context().gcs_address
        if address not in (current, "auto"):
            raise ConfigError(
                f"ray_address: this process is already connected to the Ray cluster at "
                f"{current}, not {address!r}; restart the dashboard with --ray {address} to "
                "watch that one"
            )
        return cluster_summary()
    try:
        ray.init(
            address=address,
            ignore_reinit_error=True,
            log_to_driver=False,
            logging_level="WARNING",
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(
            f"ray_address: cannot join the Ray cluster at {address!r} "
            f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        ) from None
    return cluster_summary()


def cluster_summary() -> str:
    """One line about the Ray cluster this process watches: its address, alive nodes, CPUs and
    GPUs (free of total); or that it is not connected and how to connect."""
    ray = _ray_if_connected()
    if ray is None:
        return (
            "Ray: not connected; start the dashboard with --ray ADDRESS (or call "
            "workbench.runs.cluster.connect) to watch a cluster"
        )
    alive = [n for n in ray.nodes() if n.get("Alive")]
    total, free = ray.cluster_resources(), ray.available_resources()

    def share(key: str) -> str:
        return f"{free.get(key, 0):g}/{total.get(key, 0):g} {key}s free"

    address = ray.get_runtime_context().gcs_address
    return f"Ray cluster at {address}: {len(alive)} node(s) alive, {share('CPU')}, {share('GPU')}"


def nodes() -> pd.DataFrame:
    """The Ray cluster's nodes (NODE_COLUMNS: id, address, host name, alive, CPUs, GPUs, memory
    and object store in GB), alive first; empty when this process is not connected (see
    `cluster_summary` for why)."""
    ray = _ray_if_connected()
    if ray is None:
        return pd.DataFrame(columns=list(NODE_COLUMNS))
    rows = []
    for node in ray.nodes():
        resources = node.get("Resources") or {}
        rows.append(
            {
                "node_id": node.get("NodeID"),
                "address": node.get("NodeManagerAddress"),
                "hostname": node.get("NodeManagerHostname"),
                "alive": bool(node.get("Alive")),
                "cpus": float(resources.get("CPU", 0)),
                "gpus": float(resources.get("GPU", 0)),
                "memory_gb": round(float(resources.get("memory", 0)) / GB, 2),
                "object_store_gb": round(float(resources.get("object_store_memory", 0)) / GB, 2),
            }
        )
    frame = pd.DataFrame(rows, columns=list(NODE_COLUMNS))
    return frame.sort_values(["alive", "node_id"], ascending=[False, True], ignore_index=True)


def node_addresses() -> dict[str, str]:
    """{Ray node id: its address} of the connected cluster ({} when not connected)."""
    ray = _ray_if_connected()
    if ray is None:
        return {}
    return {str(n.get("NodeID")): str(n.get("NodeManagerAddress")) for n in ray.nodes()}


def this_host_addresses() -> set[str]:
    """Addresses that mean this machine (loopback, its name's address, Ray's view of it)."""
    addresses = set(LOOPBACK_NAMES)
    try:
        addresses.add(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    ray = _ray_if_connected()
    if ray is not None:
        addresses.add(ray.util.get_node_ip_address())
    return addresses


def _run_status(results_dir: Path, run_id: str) -> str:
    """The true status of run `run_id` in `results_dir`; UNKNOWN when it is not there."""
    path = results_dir / run_id
    try:
        return Bundle.open(path).status
    except WorkbenchError:
        return UNKNOWN


def named_actors(results_dir: str | Path) -> pd.DataFrame:
    """The workbench's named shard actors alive in the connected cluster (ACTOR_COLUMNS), with
    their run's status in `results_dir`; `idle` when that run is there and no longer running.

    Actors of runs that are not in `results_dir` (UNKNOWN) are never idle: another folder's
    run may still be playing them. Empty when this process is not connected to Ray.
    """
    ray = _ray_if_connected()
    if ray is None:
        return pd.DataFrame(columns=list(ACTOR_COLUMNS))
    from workbench.runtime.ray_backend import NAMESPACE, parse_actor_name

    root, rows, statuses = Path(results_dir), [], {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        parsed = parse_actor_name(entry["name"]) if entry["namespace"] == NAMESPACE else None
        if parsed is None:
            continue
        run_id, shard = parsed
        if run_id not in statuses:
            statuses[run_id] = _run_status(root, run_id)
        status = statuses[run_id]
        known = RunStatus.of(status)
        idle = known is not None and known.is_final
        rows.append(
            {"name": entry["name"], "run_id": run_id, "shard": shard, "run_status": status}
            | {"idle": idle}
        )
    frame = pd.DataFrame(rows, columns=list(ACTOR_COLUMNS))
    return frame.sort_values(["run_id", "shard", "name"], ignore_index=True)


def idle_actors(results_dir: str | Path) -> pd.DataFrame:
    """The named workbench actors whose run in `results_dir` has ended (see `named_actors`)."""
    frame = named_actors(results_dir)
    return frame[frame["idle"].astype(bool)].reset_index(drop=True)


def shutdown_idle(results_dir: str | Path) -> list[str]:
    """Kill (`ray.kill`) the idle named workbench actors; returns the names killed.

    An actor that went away meanwhile is skipped. Nothing when this process is not connected.
    """
    ray = _ray_if_connected()
    if ray is None:
        return []
    from workbench.runtime.ray_backend import NAMESPACE

    killed = []
    for name in idle_actors(results_dir)["name"]:
        try:
            ray.kill(ray.get_actor(name, namespace=NAMESPACE))
        except ValueError:  # gone since it was listed
            continue
        killed.append(str(name))
    return killed
