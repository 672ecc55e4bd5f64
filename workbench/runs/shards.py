"""The shards of a results folder's runs, as the monitor shows them: one row per shard from
the runs' own events (every backend reports each shard's progress, node, pid and memory there,
read by the one events reader, `runs.follow.RunFollower`), with CPU and memory measured
(`runs.processes`) while the run is running on this host. A local run shows as well as a Ray
run, and a restarted dashboard shows the truth. The same runs' work per model engine, round by
round, comes from the same events (`engine_work`: a Ray run's model actors report it).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.results import list_bundles
from workbench.results.engine_table import count, shares
from workbench.results.layout import ENGINE_WORK_FIELDS
from workbench.results.run_statuses import RunStatus
from workbench.runs.cluster import node_addresses, this_host_addresses
from workbench.runs.follower import RunFollower
from workbench.runs.processes import process_usage
from workbench.runtime.events import ShardState

__all__ = [
    "ENGINE_COLUMNS",
    "SHARD_COLUMNS",
    "engine_work",
    "running_runs",
    "shard_actors",
    "shown_state",
]

SHARD_COLUMNS: tuple[str, ...] = tuple(
    "run_id run_status backend shard node address pid agents state round rounds_done "
    "answered in_flight errors error_kinds tokens cpu_percent rss_mb answers_per_s "
    "updated_at".split()
)
"""Columns of `shard_actors()`: one row per shard of each run shown (see its docstring)."""

ENGINE_COLUMNS: tuple[str, ...] = tuple(
    "run_id round engine prompts share prompt_tokens nodes visits agents seconds node "
    "address".split()
)
"""Columns of `engine_work()`: one row per model engine and round of each run shown, the
recorded fields (`results.layout.ENGINE_WORK_FIELDS`) with the engine's `share` beside its
prompts and the node's `address` after its id (a long one, last)."""

MB = 1024**2

_FOLLOWERS: dict[Path, RunFollower] = {}
_FOLLOWERS_LOCK = threading.Lock()
FOLLOWERS_KEPT = 64
"""How many runs' followers are kept between calls (several monitors may watch other folders)."""


def shown_state(shard_state: ShardState, run_status: str) -> ShardState:
    """A shard's state as a page shows it: STOPPED when it was still playing and its run is no
    longer running (failed, cancelled, dead), so it never looks live."""
    stopped = shard_state is ShardState.PLAYING and run_status != RunStatus.RUNNING
    return ShardState.STOPPED if stopped else shard_state


def _followed(paths: Iterable[Path]) -> list[RunFollower]:
    """Up-to-date followers of these bundles (kept between calls, at most FOLLOWERS_KEPT)."""
    with _FOLLOWERS_LOCK:
        wanted = [Path(p) for p in paths]
        followers = [_FOLLOWERS.pop(p, None) or RunFollower(p) for p in wanted]
        _FOLLOWERS.update(zip(wanted, followers, strict=True))  # the newest last
        for stale in list(_FOLLOWERS)[: max(len(_FOLLOWERS) - FOLLOWERS_KEPT, 0)]:
            del _FOLLOWERS[stale]
        for follower in followers:
            follower.poll()
        return followers


def _shown_runs(results_dir: str | Path, recent: int) -> list[tuple[Path, str]]:
    """The bundles whose shards are shown, with their status: every running one and the
    `recent` newest."""
    listed = list_bundles(results_dir)
    if listed.empty:
        return []
    status = dict(zip(listed["path"], listed["status"], strict=True))
    running = listed.loc[listed["status"] == RunStatus.RUNNING, "path"].tolist()
    newest = listed["path"].tolist()[-recent:] if recent > 0 else []
    return [(Path(p), str(status[p])) for p in dict.fromkeys([*running, *newest])]


def _shard_row(
    follower: RunFollower,
    status: str,
    index: int,
    here: set[str],
    nodes: dict[str, str],
    measured: dict[int, tuple[float, int] | None],
) -> dict[str, Any]:
    """One shard's row of `shard_actors`; `measured` holds each pid's usage once per call (the
    local backend's shards share one process)."""
    shard = follower.shards[index]
    event = shard.latest
    local = shard.node == "local" or (shard.node is None and follower.backend == "local")
    playing = event.state is ShardState.PLAYING
    state = shown_state(event.state, status)
    pid = shard.pid or (follower.state.pid if local else None)
    seconds = event.seconds
    if playing:
        seconds = (datetime.fromisoformat(event.at) - shard.round_started).total_seconds()
    # a pid means a process here only for this host's processes, and only while the run lives
    here_now = (
        follower.state.host == socket.gethostname() if local else nodes.get(str(shard.node)) in here
    )
    usage = None
    if status == RunStatus.RUNNING and pid and here_now:
        if pid not in measured:
            measured[pid] = process_usage(pid)
        usage = measured[pid]
    rss = usage[1] if usage is not None else shard.rss_bytes
    return {
        "run_id": follower.state.run_id,
        "run_status": status,
        "backend": follower.backend,
        "shard": index,
        "node": shard.node,
        "address": follower.state.host if local else nodes.get(str(shard.node)),
        "pid": pid,
        "agents": event.agents,
        "state": state,
        "round": event.round,
        "rounds_done": shard.rounds_done,
        "answered": event.answered,
        "in_flight": event.agents - event.answered if state is ShardState.PLAYING else 0,
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
    shown = _shown_runs(results_dir, recent)
    followers = _followed(path for path, _ in shown)
    here, addresses = this_host_addresses(), node_addresses()
    measured: dict[int, tuple[float, int] | None] = {}
    rows = [
        _shard_row(follower, status, index, here, addresses, measured)
        for follower, (_, status) in zip(followers, shown, strict=True)
        for index in sorted(follower.shards)
    ]
    return pd.DataFrame(rows, columns=list(SHARD_COLUMNS))


def engine_work(results_dir: str | Path, *, recent: int = 1, rounds: int = 3) -> pd.DataFrame:
    """What each model engine did in the newest `rounds` rounds of the runs `shard_actors`
    shows (ENGINE_COLUMNS), from their `engine_work` events, newest round first, then by
    engine: `results.layout.ENGINE_WORK_FIELDS`, the node's address when this process is
    connected to the cluster, and `share`, the engine's part of the round's prompts (nan when
    the round walked none). Empty for runs that recorded none (the local backend)."""
    shown = _shown_runs(results_dir, recent)
    addresses = node_addresses()
    rows = []
    for follower in _followed(path for path, _ in shown):
        for number in sorted(follower.engines, reverse=True)[: max(rounds, 0)]:
            engines = sorted(follower.engines[number], key=lambda e: count(e.get("engine")))
            parts = shares([e.get("prompts") for e in engines])
            for engine, share in zip(engines, parts, strict=True):
                fields = {name: engine.get(name) for name in ENGINE_WORK_FIELDS}
                rows.append(
                    {"run_id": follower.state.run_id, **fields, "round": number}
                    | {"address": addresses.get(str(engine.get("node"))), "share": share}
                )
    return pd.DataFrame(rows, columns=list(ENGINE_COLUMNS))


def running_runs(results_dir: str | Path) -> pd.DataFrame:
    """The runs in `results_dir` whose writer is still at it (`list_bundles`' columns; their
    status is the one status, so a run whose writer died reads "dead" and is left out)."""
    listed = list_bundles(results_dir)
    return listed[listed["status"] == RunStatus.RUNNING].reset_index(drop=True)
