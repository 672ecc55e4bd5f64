"""Cancel a launched run: SIGINT (as Ctrl-C) to its process, only once that process is proven
to be the launch's own `workbench run`.

A launch record (`launch.json`) is data anyone who can write the results folder could plant,
so nothing it says is trusted on its own. The process is pinned first (a pidfd, where Linux has
them, so the pid cannot be reused between the checks and the signal), then it must be: on this
host, alive, a `workbench run` whose command line names this launch's own config file
(`.launches/<id>/config.yaml`) and `--run-id <id>`, started within START_SLACK_S of the record's
time (`runs.launch_states.started_with`), and the holder of its bundle's writer lock once the
bundle exists. Otherwise nothing is sent and the refusal says why. A run that was not started by
`runs.launch` (no record) is cancelled where it runs (Ctrl-C), never from here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from datetime import UTC, datetime
from pathlib import Path

from workbench._files import atomic_write_text
from workbench._processes import process_alive, process_command
from workbench.errors import BundleError, ConfigError
from workbench.results.lock import read_holder
from workbench.runs.launch_states import LaunchState, launch_state, started_with
from workbench.runs.records import CANCEL_FILE, CONFIG_FILE, LAUNCHES_DIR, Launch, is_run_of

__all__ = ["cancel", "cancel_run", "refusal"]


def refusal(record: Launch) -> str | None:
    """Why `record.pid` must not be signalled as this launch's run; None when it is proven to
    be (see the module docstring)."""
    what = f"launch {record.launch_id}: pid {record.pid}"
    if record.folder.parent.name != LAUNCHES_DIR:
        return f"launch {record.launch_id}: its record is not in a {LAUNCHES_DIR} folder"
    if record.host != socket.gethostname():
        return f"{what} runs on host {record.host}; cancel it there"
    if not process_alive(record.pid):
        return f"{what} is no longer running; nothing to cancel"
    if not is_run_of(process_command(record.pid), record):
        return (
            f"{what} is not this launch's `workbench run` (its command line does not name "
            f"{record.folder / CONFIG_FILE} and --run-id {record.launch_id}); nothing sent"
        )
    if started_with(record) is not True:
        return (
            f"{what} did not start when the launch was recorded ({record.started_at}); it is "
            "not this launch's process; nothing sent"
        )
    holder = read_holder(record.bundle)
    if holder is not None and holder.get("pid") != record.pid:
        return (
            f"{what} does not hold its bundle's writer lock (pid {holder.get('pid')} does); "
            "nothing sent"
        )
    return None


def _record(target: Launch | LaunchState | str | Path) -> Launch:
    """The launch record a cancel names: a record, its state, a launch folder, or a bundle
    folder started by `runs.launch` (its record under `.launches`)."""
    if isinstance(target, Launch):
        return target
    if isinstance(target, LaunchState):
        if target.launch is not None:
            return target.launch
        if target.bundle is None:
            raise BundleError("cancel: the state names neither a launch nor a bundle")
        target = target.bundle
    path = Path(target)
    for folder in (path, path.parent / LAUNCHES_DIR / path.name):
        if (folder / "launch.json").is_file():
            return Launch.read(folder)
    if path.is_dir():
        raise BundleError(
            f"{path}: not started from this results folder's launcher (no launch record), so "
            "it is not cancelled from here; stop it where it runs (Ctrl-C)"
        )
    raise ConfigError(f"cancel: {path} is neither a launch folder nor a result bundle")


def _interrupt(record: Launch) -> None:
    """Pin the launch's process, prove it is the launch's run, then send it SIGINT."""
    pidfd: int | None = None
    open_pidfd = getattr(os, "pidfd_open", None)
    if open_pidfd is not None:
        try:
            pidfd = open_pidfd(record.pid)
        except ProcessLookupError:
            raise BundleError(
                f"launch {record.launch_id}: pid {record.pid} is no longer running; nothing "
                "to cancel"
            ) from None
        except OSError:
            pidfd = None  # an old kernel: the checks and the signal are moments apart
    try:
        why = refusal(record)
        if why is not None:
            raise BundleError(why)
        # before the signal: a run stopped before its bundle exists then reads cancelled
        atomic_write_text(
            record.folder / CANCEL_FILE,
            json.dumps({"pid": record.pid, "at": datetime.now(UTC).isoformat()}),
        )
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGINT)
            else:
                os.kill(record.pid, signal.SIGINT)
        except ProcessLookupError:
            raise BundleError(
                f"launch {record.launch_id}: its process (pid {record.pid}) ended meanwhile"
            ) from None
        except PermissionError:
            raise BundleError(
                f"launch {record.launch_id}: its process (pid {record.pid}) belongs to another "
                "user; nothing sent"
            ) from None
    finally:
        if pidfd is not None:
            os.close(pidfd)


def cancel(target: Launch | LaunchState | str | Path) -> int:
    """Interrupt a launched run (SIGINT, as Ctrl-C: the CLI marks its bundle cancelled; a run
    interrupted before its bundle exists writes none). `target` is a launch, its state, a
    launch folder or the bundle of a launch. Returns the pid signalled; BundleError, with
    nothing sent, when the run is over or its process is not proven to be the launch's."""
    record = _record(target)
    if record.host != socket.gethostname():
        raise BundleError(f"launch {record.launch_id} runs on host {record.host}; cancel it there")
    state = launch_state(record)
    # a live process a finished launch names without a bundle is no run of it: say why below
    if state.finished and (state.bundle is not None or not process_alive(record.pid)):
        raise BundleError(
            f"launch {record.launch_id}: the run is {state.status}; nothing to cancel"
        )
    _interrupt(record)
    return record.pid


def cancel_run(target: Launch | LaunchState | str | Path) -> str:
    """`cancel` said in one line, for a page or the CLI: what was sent, or why nothing was."""
    try:
        pid = cancel(target)
    except (BundleError, ConfigError) as exc:
        return str(exc)
    name = target.launch_id if isinstance(target, Launch | LaunchState) else Path(target).name
    return f"{name}: sent SIGINT to its run (pid {pid}); it stops as cancelled"
