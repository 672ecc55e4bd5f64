"""What the ClusterMonitor reads: Ray's nodes, the shard actors of the runs in a results folder,
the model endpoints of running runs with their health, the workbench's named actors (and which
of them are idle), and a run's cancel.

Shard actors are read from their runs' events (`events.jsonl`: every backend reports each
shard's progress, node, pid and memory there), so a local run shows as well as a Ray run and a
restarted dashboard shows the truth; CPU and memory of a shard's process come from psutil when
it runs on this host. Nodes and named actors come from Ray's public API (`ray.nodes`,
`ray.util.list_named_actors`), endpoint health from the same `GET <base_url>/models` check a run
makes before it starts (`workbench.llm.servers.served_by`).

Every function that asks Ray first checks that this process is connected: Ray's public calls
start a local cluster when none is, and a monitor must never do that. No Panel here: the
monitor's state is testable on its own and the same reads serve a notebook. Calls block (Ray,
disk, HTTP): a page calls them in a worker thread.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.config import LLMPolicySpec, ModelSpec, RunConfig
from workbench.errors import BundleError, ConfigError, ModelError, WorkbenchError
from workbench.results import Bundle, list_bundles, read_events
from workbench.results.layout import EVENTS_FILE
from workbench.runtime.events import (
    RunStarted,
    RunState,
    ShardProgress,
    event_from_dict,
    run_state,
)
from workbench.ui.launches import cancel, run_coroutine
from workbench.ui.run_tables import shown_state

__all__ = [
    "ACTOR_COLUMNS",
    "ENDPOINT_COLUMNS",
    "NODE_COLUMNS",
    "SHARD_COLUMNS",
    "RunTracker",
    "cancel_run",
    "cluster_summary",
    "connect",
    "endpoints",
    "idle_actors",
    "is_connected",
    "named_actors",
    "nodes",
    "process_usage",
    "running_runs",
    "shard_actors",
    "shutdown_idle",
]

NODE_COLUMNS: tuple[str, ...] = tuple(
    "node_id address hostname alive cpus gpus memory_gb object_store_gb".split()
)
"""Columns of `nodes()`: one row per Ray node (sizes are what the node declares)."""

SHARD_COLUMNS: tuple[str, ...] = tuple(
    "run_id run_status backend shard node address pid agents state round rounds_done "
    "answered in_flight errors error_kinds tokens cpu_percent rss_mb answers_per_s "
    "updated_at".split()
)
"""Columns of `shard_actors()`: one row per shard of each run shown (see its docstring)."""

ENDPOINT_COLUMNS: tuple[str, ...] = tuple(
    "run_id model kind name base_url health detail latency_ms".split()
)
"""Columns of `endpoints()`: one row per model endpoint of each running run."""

ACTOR_COLUMNS: tuple[str, ...] = ("name", "run_id", "shard", "run_status", "idle")
"""Columns of `named_actors()`: the workbench's named Ray actors and whether they are idle."""

HEALTH_TIMEOUT_S = 1.0
"""How long an endpoint's health check waits for `GET <base_url>/models`."""

GB = 1024**3
MB = 1024**2

# --------------------------------------------------------------------------- Ray


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
            "workbench.ui.cluster_data.connect) to watch a cluster"
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


def _node_addresses() -> dict[str, str]:
    """{Ray node id: its address} of the connected cluster ({} when not connected)."""
    ray = _ray_if_connected()
    if ray is None:
        return {}
    return {str(n.get("NodeID")): str(n.get("NodeManagerAddress")) for n in ray.nodes()}


def _this_host_addresses() -> set[str]:
    """Addresses that mean this machine (loopback, its name's address, Ray's view of it)."""
    addresses = {"127.0.0.1", "localhost", "::1"}
    try:
        addresses.add(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    ray = _ray_if_connected()
    if ray is not None:
        addresses.add(ray.util.get_node_ip_address())
    return addresses


# --------------------------------------------------------------------------- shard actors


@dataclass
class _Shard:
    """What a run's events say of one shard so far."""

    latest: ShardProgress
    round_started: datetime
    node: str | None = None
    pid: int | None = None
    rss_bytes: int | None = None
    rounds_done: int = 0


@dataclass
class RunTracker:
    """One run's events folded as they are appended: the run's `RunState` plus, per shard, when
    its current round started, its last known node, pid and memory, and its rounds done.

    `update()` reads only the lines appended since the last call, so a monitor that refreshes
    every few seconds reads a long run's events once.
    """

    path: Path
    state: RunState = field(default_factory=RunState)
    backend: str | None = None
    shards: dict[int, _Shard] = field(default_factory=dict)
    offset: int = 0

    def update(self) -> RunTracker:
        """Fold the events appended since the last call (from the start if the file shrank)."""
        events = self.path / EVENTS_FILE
        if events.exists() and events.stat().st_size < self.offset:  # rewritten: start over
            self.state, self.backend, self.shards, self.offset = RunState(), None, {}, 0
        records, self.offset = read_events(self.path, self.offset)
        for record in records:
            event = event_from_dict(record)
            if event is None:
                continue
            self.state.apply(event)
            if isinstance(event, RunStarted):
                self.backend = event.backend
            elif isinstance(event, ShardProgress):
                self._shard_progress(event)
        return self

    def _shard_progress(self, event: ShardProgress) -> None:
        at = datetime.fromisoformat(event.at)
        shard = self.shards.get(event.shard)
        if shard is None:
            shard = self.shards[event.shard] = _Shard(latest=event, round_started=at)
        elif event.round != shard.latest.round:
            shard.round_started = at
        shard.latest = event
        shard.node = event.node or shard.node
        shard.pid = event.pid or shard.pid
        shard.rss_bytes = event.rss_bytes or shard.rss_bytes
        if event.state == "done":
            shard.rounds_done = max(shard.rounds_done, event.round)


_TRACKERS: dict[Path, RunTracker] = {}
_TRACKERS_LOCK = threading.Lock()
TRACKERS_KEPT = 64
"""How many runs' trackers are kept between calls (several monitors may watch other folders)."""


def _tracked(paths: Iterable[Path]) -> list[RunTracker]:
    """Up-to-date trackers of these bundles (kept between calls, at most TRACKERS_KEPT)."""
    with _TRACKERS_LOCK:
        wanted = [Path(p) for p in paths]
        trackers = [_TRACKERS.pop(p, None) or RunTracker(p) for p in wanted]
        _TRACKERS.update(zip(wanted, trackers, strict=True))  # the newest last
        for stale in list(_TRACKERS)[: max(len(_TRACKERS) - TRACKERS_KEPT, 0)]:
            del _TRACKERS[stale]
        return [tracker.update() for tracker in trackers]


def _shown_runs(results_dir: str | Path, recent: int) -> list[Path]:
    """The bundles whose shards are shown: every running one and the `recent` newest."""
    listed = list_bundles(results_dir)
    if listed.empty:
        return []
    running = listed.loc[listed["status"] == "running", "path"].tolist()
    newest = listed["path"].tolist()[-recent:] if recent > 0 else []
    return [Path(p) for p in dict.fromkeys([*running, *newest])]


_PROCESSES: dict[int, Any] = {}
_PROCESSES_LOCK = threading.Lock()


def process_usage(pid: int) -> tuple[float, int] | None:
    """(CPU %, resident bytes) of process `pid` on this host; None when it is gone.

    CPU is the share of one core since the last call for that pid (the first call: since the
    process started), as `top` shows it.
    """
    import psutil

    with _PROCESSES_LOCK:
        process = _PROCESSES.get(pid)
        try:
            if process is None or not process.is_running():
                process = _PROCESSES[pid] = psutil.Process(pid)
                times = process.cpu_times()
                process.cpu_percent(None)  # starts the interval of the next call
                age = max(time.time() - process.create_time(), 1e-6)
                cpu = 100.0 * (times.user + times.system) / age
            else:
                cpu = process.cpu_percent(None)
            return round(cpu, 1), int(process.memory_info().rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            _PROCESSES.pop(pid, None)
            return None


def _shard_row(
    tracker: RunTracker,
    index: int,
    here: set[str],
    nodes: dict[str, str],
    measured: dict[int, tuple[float, int] | None],
) -> dict[str, Any]:
    """One shard's row of `shard_actors`; `measured` holds each pid's usage once per call (the
    local backend's shards share one process)."""
    shard = tracker.shards[index]
    event = shard.latest
    status = tracker.state.true_status
    local = shard.node == "local" or (shard.node is None and tracker.backend == "local")
    playing = event.state == "playing"
    state = shown_state(event.state, status)
    pid = shard.pid or (tracker.state.pid if local else None)
    seconds = event.seconds
    if playing:
        seconds = (datetime.fromisoformat(event.at) - shard.round_started).total_seconds()
    # a pid means a process here only for this host's processes, and only while the run lives
    here_now = (
        tracker.state.host == socket.gethostname() if local else nodes.get(str(shard.node)) in here
    )
    usage = None
    if status == "running" and pid and here_now:
        if pid not in measured:
            measured[pid] = process_usage(pid)
        usage = measured[pid]
    rss = usage[1] if usage is not None else shard.rss_bytes
    return {
        "run_id": tracker.state.run_id,
        "run_status": status,
        "backend": tracker.backend,
        "shard": index,
        "node": shard.node,
        "address": tracker.state.host if local else nodes.get(str(shard.node)),
        "pid": pid,
        "agents": event.agents,
        "state": state,
        "round": event.round,
        "rounds_done": shard.rounds_done,
        "answered": event.answered,
        "in_flight": event.agents - event.answered if state == "playing" else 0,
        "errors": sum(event.errors.values()),
        "error_kinds": ", ".join(f"{k} {v}" for k, v in sorted(event.errors.items())),
        "tokens": event.prompt_tokens + event.completion_tokens,
        "cpu_percent": usage[0] if usage is not None else float("nan"),
        "rss_mb": round(rss / MB, 1) if rss else float("nan"),
        "answers_per_s": round(event.answered / seconds, 2) if seconds > 0 else 0.0,
        "updated_at": event.at,
    }


def shard_actors(results_dir: str | Path, *, recent: int = 1) -> pd.DataFrame:
    """The shards of the running runs in `results_dir` and of its `recent` newest runs, from
    their events (SHARD_COLUMNS), one row per shard that reported, in run and shard order.

    `state` is the shard's last report (playing, done), or "stopped" when it was playing and
    its run is no longer running (failed, cancelled, or its writer died: run_status "dead");
    `in_flight` its agents still waiting for an answer; `node` the Ray node id ("local" for the
    local backend) and `address` that node's address when this process is connected to the
    cluster (the run's host for the local backend); `cpu_percent` and `rss_mb` are measured
    (psutil) while the run is running and its process is on this host, else `rss_mb` is the
    memory the shard last reported; `answers_per_s` its answers over the round's time so far.
    """
    trackers = _tracked(_shown_runs(results_dir, recent))
    here, addresses = _this_host_addresses(), _node_addresses()
    measured: dict[int, tuple[float, int] | None] = {}
    rows = [
        _shard_row(tracker, index, here, addresses, measured)
        for tracker in trackers
        for index in sorted(tracker.shards)
    ]
    return pd.DataFrame(rows, columns=list(SHARD_COLUMNS))


def running_runs(results_dir: str | Path) -> pd.DataFrame:
    """The runs in `results_dir` whose writer is still at it (`list_bundles`' columns with the
    true status: a run whose writer died reads "dead" and is left out)."""
    listed = list_bundles(results_dir)
    running = listed[listed["status"] == "running"]
    alive = [run_state(p).true_status == "running" for p in running["path"]]
    return running.loc[pd.Series(alive, index=running.index, dtype=bool)].reset_index(drop=True)


# --------------------------------------------------------------------------- endpoints


def _model_specs(config: RunConfig) -> dict[str, ModelSpec]:
    """The run's models by key: `models` when it names several, else its one `model`."""
    return dict(config.models) if config.models else {"model": config.model}


async def _health(base_url: str, spec: ModelSpec, timeout_s: float) -> tuple[str, str, float]:
    """(health, detail, latency in ms) of one endpoint: "ok" with who serves the model, or
    "unreachable"/"error" with the check's own message."""
    import httpx

    from workbench.llm.servers import served_by

    key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    start = time.perf_counter()
    async with httpx.AsyncClient(headers=headers, timeout=timeout_s) as client:
        try:
            owner = await served_by(client, base_url.rstrip("/"), spec.name or "", timeout_s)
        except ModelError as exc:
            health = "unreachable" if "cannot reach" in str(exc) else "error"
            return health, str(exc), round(1000 * (time.perf_counter() - start), 1)
    detail = f"serves {spec.name!r}" + (f" (owned by {owner})" if owner else "")
    return "ok", detail, round(1000 * (time.perf_counter() - start), 1)


def endpoints(results_dir: str | Path, *, timeout_s: float = HEALTH_TIMEOUT_S) -> pd.DataFrame:
    """The model endpoints of the running runs in `results_dir` (ENDPOINT_COLUMNS), each
    checked at once with `GET <base_url>/models` (at most `timeout_s`): health "ok" when it
    answers and serves the run's model name, "unreachable" or "error" with the reason.

    Models that live inside the run's processes (embedded, replay, in-process vLLM) are listed
    with health "in-process" and no URL.
    """
    rows: list[dict[str, Any]] = []
    checks: list[tuple[dict[str, Any], str, ModelSpec]] = []
    for path in running_runs(results_dir)["path"]:
        try:
            config = Bundle.open(path).config
        except (BundleError, ConfigError):
            continue
        if not isinstance(config.policy, LLMPolicySpec):
            continue  # a baseline policy asks no model
        for key, spec in _model_specs(config).items():
            base = {"run_id": Path(path).name, "model": key, "kind": spec.kind}
            base["name"] = spec.name or spec.kind
            if spec.kind != "openai":
                rows.append({**base, "base_url": "", "health": "in-process", "detail": ""})
                continue
            for url in spec.base_urls:
                row = {**base, "base_url": url}
                rows.append(row)
                checks.append((row, url, spec))

    async def check_all() -> list[tuple[str, str, float]]:
        return await asyncio.gather(*(_health(u, s, timeout_s) for _, u, s in checks))

    if checks:
        for (row, _, _), (health, detail, ms) in zip(
            checks, run_coroutine(check_all()), strict=True
        ):
            row.update(health=health, detail=detail, latency_ms=ms)
    return pd.DataFrame(rows, columns=list(ENDPOINT_COLUMNS))


# --------------------------------------------------------------------------- named actors


def _run_status(results_dir: Path, run_id: str) -> str:
    """The true status of run `run_id` in `results_dir`; "unknown" when it is not there."""
    path = results_dir / run_id
    if not (path / "manifest.json").is_file():
        return "unknown"
    try:
        return run_state(path).true_status
    except WorkbenchError:
        return "unknown"


def named_actors(results_dir: str | Path) -> pd.DataFrame:
    """The workbench's named shard actors alive in the connected cluster (ACTOR_COLUMNS), with
    their run's status in `results_dir`; `idle` when that run is there and no longer running.

    Actors of runs that are not in `results_dir` ("unknown") are never idle: another folder's
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
        idle = status not in ("running", "unknown")
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


# --------------------------------------------------------------------------- cancel


def cancel_run(bundle: str | Path) -> str:
    """Cancel a running run by sending SIGINT to the process writing it (the CLI's Ctrl-C: the
    run stops as cancelled and can be resumed); returns what was done, in one line.

    Only a writer alive on this host is signalled. A run this very process plays (a run the
    dashboard itself launched) is not: SIGINT would stop the dashboard; cancel it where it was
    launched (the RunLauncher's Cancel). Raises BundleError when `bundle` is not a bundle.
    """
    path = Path(bundle)
    Bundle.open(path)  # BundleError in one line when it is not one
    state = run_state(path)
    name = state.run_id or path.name
    status = state.true_status
    if status != "running":
        return f"{name} is not running ({status}): nothing to cancel"
    if state.pid == os.getpid():
        return f"{name} runs in this process: cancel it from the run launcher that started it"
    try:
        pid = cancel(path)  # the launcher's checks: this host, the lock holder, a workbench run
    except BundleError as exc:
        return f"{name}: {exc}"
    return f"{name}: sent SIGINT to its writer (pid {pid}); it stops as cancelled"
