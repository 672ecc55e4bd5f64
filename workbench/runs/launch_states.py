"""What a launch is now: its run's one status (`results.current_status.run_status` of its
bundle), or, before its bundle exists, whether its process still starts (running), was cancelled
or failed (with its log's last line). Also the runs of a results folder as one table
(`list_runs`) and the launches still live (`live_launches`, for the launch cap).

Nothing here holds state that matters: a restarted dashboard or another shell reads the same.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from workbench import _files
from workbench._processes import (
    START_SLACK_S,
    iso_epoch,
    process_alive,
    process_command,
    process_started,
)
from workbench.errors import BundleError, ConfigError
from workbench.results import Bundle, list_bundles
from workbench.results.bundle import BUNDLE_COLUMNS
from workbench.results.layout import MANIFEST, RUN_ID_PATTERN
from workbench.results.run_statuses import RunStatus, resume_hint
from workbench.runs.follower import run_state
from workbench.runs.records import (
    CANCEL_FILE,
    EXIT_FILE,
    LAUNCHES_DIR,
    Launch,
    is_run_of,
    launch_records,
)
from workbench.runtime.events import RunState

__all__ = [
    "RUN_COLUMNS",
    "LaunchState",
    "bundle_state",
    "launch_alive",
    "launch_state",
    "launches",
    "list_runs",
    "live_launches",
    "log_error",
    "resolve_run",
    "running_bundles",
    "started_with",
    "wait_for",
]

LAUNCH_START_S = 30.0
"""Longest a launch's process may start after its record's time (the launcher stamps the record
just before it starts the process; a busy machine may take seconds to fork)."""
LOG_TAIL_BYTES = 16_384
"""How much of a run's log is read for its last error line."""
RUN_COLUMNS: tuple[str, ...] = (*BUNDLE_COLUMNS, "launch_id")
"""Columns of `list_runs`: a bundle's row and the launch that started the run."""


@dataclass
class LaunchState:
    """A launch's (or a bundle's) state now: `status` is the one status (running, complete,
    failed, cancelled, dead), `run` the bundle's events once it has some, `error` why a run
    did not complete."""

    launch: Launch | None
    status: RunStatus
    bundle: Path | None = None
    run: RunState | None = None
    error: str | None = None
    rounds_done: int = 0
    rounds: int = 0

    @property
    def returncode(self) -> int | None:
        """The launch's process exit code once it exited and was reaped here (exit.json)."""
        if self.launch is None:
            return None
        try:
            data = json.loads((self.launch.folder / EXIT_FILE).read_text(encoding="utf-8"))
            return int(data["returncode"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def finished(self) -> bool:
        """Whether the run is over (complete, failed, cancelled or dead)."""
        return self.status.is_final

    @property
    def launch_id(self) -> str | None:
        """The launch's id (None for a bundle started elsewhere)."""
        return None if self.launch is None else self.launch.launch_id


def log_error(path: str | Path) -> str | None:
    """The last non-empty line of a run's log (its error: the CLI's `error: ...` line or a
    traceback's last line), without the `error: ` prefix; None for an empty or missing log."""
    try:
        with Path(path).open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1].removeprefix("error: ") if lines else None


def bundle_state(
    bundle: str | Path, launch: Launch | None = None, run: RunState | None = None
) -> LaunchState:
    """The state of a bundle's run: its one status, its events (`run`, read when not given),
    and for a run that did not complete the error with the resume command."""
    bundle = Path(bundle)
    run = run if run is not None else run_state(bundle)
    resumable: bool | None = None
    try:
        opened = Bundle.open(bundle)
        status, error = opened.status, opened.error or run.error
        resumable = opened.resumable
    except BundleError as exc:
        status, error = RunStatus.FAILED, str(exc)
    if status is RunStatus.DEAD:
        who = f"the run's process (pid {run.pid})" if run.pid else "the run's process"
        error = f"{who} died without finishing after {run.rounds_done} of {run.rounds} rounds"
    hint = resume_hint(status, error, bundle, resumable=resumable, unless_said=True)
    if hint is not None:
        error = f"{error or status}; resume it with {hint}"
    return LaunchState(
        launch=launch,
        status=status,
        bundle=bundle,
        run=run,
        error=error,
        rounds_done=run.rounds_done,
        rounds=run.rounds or (launch.rounds if launch else 0),
    )


def started_with(record: Launch) -> bool | None:
    """Whether process `record.pid` started when the launch was recorded: no earlier than
    START_SLACK_S before it (an older process is not the launch's), no later than
    LAUNCH_START_S after it (a pid reused since is not); None when a time is unknown."""
    started, recorded = process_started(record.pid), iso_epoch(record.started_at)
    if started is None or recorded is None:
        return None
    return recorded - START_SLACK_S <= started <= recorded + LAUNCH_START_S


def launch_alive(record: Launch) -> bool:
    """Whether the launch's own process still runs: on this host, alive (not a zombie),
    started when the launch was recorded, and (where /proc tells) running the launch's own
    `workbench run` (`is_run_of`), so no reused pid passes for it."""
    if record.host != socket.gethostname() or not process_alive(record.pid):
        return False
    command = process_command(record.pid)
    return started_with(record) is not False and (command is None or is_run_of(command, record))


def launch_state(record: Launch) -> LaunchState:
    """A launch's state now: its bundle's once the bundle has a manifest, else running while
    its process starts, cancelled or failed (its log's last line) once that process is gone."""
    if (record.bundle / MANIFEST).is_file():
        return bundle_state(record.bundle, record)
    # the bundle is written moments after the process starts: read again once it is gone
    alive = launch_alive(record)
    if (record.bundle / MANIFEST).is_file():
        return bundle_state(record.bundle, record)
    if alive:
        return LaunchState(launch=record, status=RunStatus.RUNNING, rounds=record.rounds)
    if (record.folder / CANCEL_FILE).exists():
        error = log_error(record.log_path) or "cancelled before the run started"
        return LaunchState(
            launch=record, status=RunStatus.CANCELLED, error=error, rounds=record.rounds
        )
    error = log_error(record.log_path) or "the run's process exited before writing a bundle"
    return LaunchState(launch=record, status=RunStatus.FAILED, error=error, rounds=record.rounds)


def launches(results_dir: str | Path, limit: int | None = None) -> list[LaunchState]:
    """Every launch under `results_dir` with its state, newest first (at most `limit`).

    Unreadable launch records are skipped; a missing folder gives none.
    """
    return [launch_state(record) for record in launch_records(results_dir)[:limit]]


def live_launches(results_dir: str | Path) -> list[LaunchState]:
    """The launches under `results_dir` whose run is running now."""
    return [s for s in launches(results_dir) if s.status is RunStatus.RUNNING]


def list_runs(results_dir: str | Path) -> pd.DataFrame:
    """The runs of `results_dir` (RUN_COLUMNS), oldest first: every bundle's row with its one
    status, and launches whose bundle is not written (yet, or ever: what their bundle's manifest
    would say is None); `launch_id` names the launch record of a run started by `runs.launch`."""
    root = Path(results_dir)
    records = {r.launch_id: r for r in launch_records(root)}
    listed = list_bundles(root)
    rows: list[dict[str, Any]] = []
    for row in listed.to_dict("records"):
        folder = Path(str(row["path"])).name
        rows.append({**row, "launch_id": folder if folder in records else ""})
    written = {Path(str(p)).name for p in listed["path"]}
    for launch_id, record in records.items():
        if launch_id in written:
            continue
        state = launch_state(record)
        rows.append(
            dict.fromkeys(RUN_COLUMNS)
            | {
                "run_id": launch_id,
                "status": state.status,
                "created_at": record.started_at,
                "rounds_done": 0,
                "launch_id": launch_id,
                "path": str(record.bundle),
            }
        )
    frame = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    return frame.sort_values(["created_at", "run_id"], ignore_index=True) if rows else frame


def running_bundles(results_dir: str | Path) -> list[Path]:
    """The bundles under `results_dir` whose run is running now (started anywhere), newest
    first."""
    listed = list_bundles(results_dir)
    running = listed.loc[listed["status"] == RunStatus.RUNNING, "path"]
    return [Path(str(p)) for p in reversed(running.tolist())]


def resolve_run(target: str | Path, results_dir: str | Path | None = None) -> Path:
    """The bundle of a run named on the command line: a bundle folder, a launch folder
    (`.launches/<id>`) or a run id under `results_dir` (default: the workbench's results
    folder); ConfigError naming what was tried."""
    path = Path(target)
    if path.parent.name == LAUNCHES_DIR:
        return path.parent.parent / path.name
    if path.is_dir():
        return path
    root = _files.results_dir(results_dir)
    if RUN_ID_PATTERN.fullmatch(str(target)) and (
        (root / str(target)).is_dir() or (root / LAUNCHES_DIR / str(target)).is_dir()
    ):
        return root / str(target)
    raise ConfigError(
        f"RUN: {target} is neither a bundle folder, a launch folder nor a run id under "
        f"{root}; name one that `workbench runs list {root}` shows"
    )


def wait_for(
    results_dir: str | Path, launch_id: str, *, timeout_s: float = 120.0, poll_s: float = 0.2
) -> LaunchState:
    """Poll the launch until it is finished; its state (TimeoutError after `timeout_s`). For
    scripts and tests; the page polls on its own."""
    deadline = time.monotonic() + timeout_s
    folder = Path(results_dir).absolute() / LAUNCHES_DIR / launch_id
    while True:
        state = launch_state(Launch.read(folder))
        if state.finished:
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"launch {launch_id} not finished within {timeout_s} s")
        time.sleep(poll_s)
