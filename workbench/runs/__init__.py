"""Detached runs as a library, no Panel: launch a `workbench run` with a run id chosen here
(`launch`), list runs and launches with their one status (`launch_states`, from
`results.current_status.run_status`), follow a run's events (`follow`: the one events.jsonl
reader), cancel only a process proven to be a launch's own run (`cancel`), and what the monitor
reads (`cluster`: Ray, `shards`: shard rows, `endpoints`: health checks that carry no key).
The CLI (`workbench runs list|follow|cancel`), the dashboard and notebooks all use these.
The names below load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

if TYPE_CHECKING:
    from workbench.runs.cancelling import cancel, cancel_run
    from workbench.runs.follower import RunFollower, follow, run_state
    from workbench.runs.launch_states import LaunchState, launch_state, launches, list_runs
    from workbench.runs.launcher import launch
    from workbench.runs.records import Launch, launch_records

_HOMES: dict[str, str] = {
    "Launch": "workbench.runs.records",
    "LaunchState": "workbench.runs.launch_states",
    "RunFollower": "workbench.runs.follower",
    "cancel": "workbench.runs.cancelling",
    "cancel_run": "workbench.runs.cancelling",
    "follow": "workbench.runs.follower",
    "launch": "workbench.runs.launcher",
    "launch_records": "workbench.runs.records",
    "launch_state": "workbench.runs.launch_states",
    "launches": "workbench.runs.launch_states",
    "list_runs": "workbench.runs.launch_states",
    "run_state": "workbench.runs.follower",
}

__all__ = [
    "Launch",
    "LaunchState",
    "RunFollower",
    "cancel",
    "cancel_run",
    "follow",
    "launch",
    "launch_records",
    "launch_state",
    "launches",
    "list_runs",
    "run_state",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())
