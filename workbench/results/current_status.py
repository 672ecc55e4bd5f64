"""The one status of a run now: running, complete, failed, cancelled or dead (`RunStatus`).

A bundle's manifest records what its writer said last (running, then complete, failed or
cancelled when `finish()` ran). A writer killed with SIGKILL (or a machine that lost power)
never says more, so the manifest alone would read "running" for ever. Its writer lock
(`.writer.lock`: pid, host, start time) is the other half of the truth: a manifest that reads
running whose lock holder is gone (or whose lock is gone) is "dead". A writer on another host
cannot be judged from here and reads running.

`Bundle.status`, `list_bundles`, `workbench bundles list|show`, `workbench runs ...`, the
dashboard's launcher and monitor and `RunState.true_status` all ask `run_status`; no other place
derives a run's status.
"""

from __future__ import annotations

import json
from pathlib import Path

from workbench.results import lock
from workbench.results.layout import LOCK_FILE, MANIFEST
from workbench.results.run_statuses import MANIFEST_STATUSES, RunStatus

__all__ = ["run_status", "writer_alive"]


def writer_alive(bundle: str | Path) -> bool | None:
    """Whether the process holding `bundle`'s writer lock runs (`lock.holder_alive`): False
    when the lock is gone or its process is; None when it cannot be judged from here (another
    host, an unreadable lock)."""
    path = Path(bundle) / LOCK_FILE
    holder = lock.read_holder(bundle)
    if holder is None:
        return False if not (path.exists() or path.is_symlink()) else None
    return lock.holder_alive(holder, path)


def _recorded(bundle: Path) -> RunStatus | None:
    """The status the manifest records (None when it does not read)."""
    try:
        data = json.loads((bundle / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    status = data.get("status") if isinstance(data, dict) else None
    return RunStatus(status) if status in MANIFEST_STATUSES else None


def run_status(bundle: str | Path, recorded: str | None = None) -> RunStatus:
    """The run's status now: the manifest's (`recorded`, read when not given), except that a
    run recorded as running whose writer is gone reads "dead". `recorded` must be one of
    MANIFEST_STATUSES; a manifest that does not read gives ValueError (`Bundle.status` says it
    in the bundle's terms first)."""
    path = Path(bundle)
    status = RunStatus(recorded) if recorded is not None else _recorded(path)
    if status is None:
        raise ValueError(f"{path / MANIFEST}: no readable status")
    if status is not RunStatus.RUNNING or writer_alive(path) is not False:
        return status
    again = _recorded(path)  # the writer may have finished (and released) between the reads
    return again if again not in (None, RunStatus.RUNNING) else RunStatus.DEAD
