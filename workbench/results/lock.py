"""One writer per bundle: a lock file holding the writer's pid and host.

The lock (`.writer.lock`, JSON {pid, host, started_at}) is created with O_CREAT|O_EXCL, so of
two processes racing for a bundle exactly one gets it. A lock left by a process that died on
this host is recognised (its pid is gone, or now belongs to a process started after the lock
was taken) and taken over; a lock from another host cannot be checked from here and is refused
with the fix. `holder_alive` is the one judgement of a writer's life: the run status
(`results.current_status`) and the stale-lock takeover both ask it.
"""

from __future__ import annotations

import json
import os
import socket
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench._files import fsync_dir
from workbench._processes import process_alive, started_before
from workbench.errors import BundleLockedError
from workbench.results.layout import LOCK_FILE

_HELD: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
"""Locks this process holds, by lock path, each to the live object (a writer) holding it."""

_ATTEMPTS = 3


def _key(path: Path) -> str:
    """A lock's key in `_HELD`: its absolute path, however the bundle was named."""
    return os.path.abspath(path)


def _holder(path: Path) -> dict[str, Any] | None:
    """The lock file's content, or None when it is gone, unreadable or not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def read_holder(bundle: str | Path) -> dict[str, Any] | None:
    """The writer lock of `bundle` ({pid, host, started_at}); None when there is none or it
    is unreadable."""
    return _holder(Path(bundle) / LOCK_FILE)


def holder_alive(holder: dict[str, Any], path: Path | None = None) -> bool | None:
    """Whether the process a lock names still runs: its pid alive on this host (a zombie is
    not) and started no later than the lock was taken (a reused pid started after). None when
    the lock is from another host or names no pid (it cannot be judged from here). A lock held
    by this process is alive while a writer here holds it (`path` names the lock file)."""
    pid = holder.get("pid")
    if holder.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return None
    if pid == os.getpid():
        return path is None or _key(path) in _HELD
    return process_alive(pid) and started_before(pid, holder.get("started_at"))


def _is_stale(path: Path, holder: dict[str, Any]) -> bool:
    """Whether a readable lock on this host belongs to a process that is gone."""
    return holder_alive(holder, path) is False


def _refusal(bundle: Path, path: Path, holder: dict[str, Any] | None) -> BundleLockedError:
    """The one-line error for a lock held by someone else, with the fix."""
    if holder is None:
        return BundleLockedError(
            f"{bundle}: locked by {path.name}, which is unreadable; if no process is writing "
            f"this bundle, delete {path} and retry"
        )
    pid, host = holder.get("pid"), holder.get("host")
    since = holder.get("started_at")
    if host != socket.gethostname():
        return BundleLockedError(
            f"{bundle}: being written by pid {pid} on host {host} (since {since}); if that "
            f"process is gone, delete {path} and retry"
        )
    return BundleLockedError(
        f"{bundle}: being written by pid {pid} on host {host} (since {since}); wait for that "
        "run to end (or stop it) and retry"
    )


def acquire(bundle: str | Path, owner: object) -> Path:
    """Take the bundle's writer lock for `owner` (held while `owner` lives); its path.

    BundleLockedError when a live process (or a live writer in this one) holds it.
    """
    bundle = Path(bundle)
    path = bundle / LOCK_FILE
    holder: dict[str, Any] | None = None
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _holder(path)
            if holder is None and not path.exists():
                continue  # released between our open and our read
            if holder is not None and _is_stale(path, holder):
                path.unlink(missing_ok=True)
                continue
            raise _refusal(bundle, path, holder) from None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(info).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        fsync_dir(bundle)
        _HELD[_key(path)] = owner
        return path
    raise _refusal(bundle, path, holder)


def release(path: Path, owner: object) -> None:
    """Give the lock back if `owner` holds it (removes the file); a no-op otherwise."""
    if _HELD.get(_key(path)) is not owner:
        return
    del _HELD[_key(path)]
    holder = _holder(path)
    if holder is not None and holder.get("pid") == os.getpid():
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)
