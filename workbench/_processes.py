"""Processes on this host, as /proc tells: alive (a zombie is not), started when, running what.

The ground floor of run status and cancel: the writer lock (`results.lock`) tells a live writer
from a dead one by its pid and start time, and `runs.cancel` checks, before it signals a pid,
that the process really is the run it means (not a pid reused since by another program). Off
Linux, where /proc is absent, `process_alive` falls back to `os.kill(pid, 0)` and the start
time and command read as unknown.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

__all__ = [
    "START_SLACK_S",
    "iso_epoch",
    "process_alive",
    "process_command",
    "process_started",
    "started_before",
]

START_SLACK_S = 2.0
"""Clock slack when comparing a process's start time with a launch's or a lock's."""


def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text(encoding="ascii").splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (None: no such process)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def process_alive(pid: int) -> bool:
    """Whether process `pid` runs on this host (a zombie, exited but not reaped, does not)."""
    fields = _proc_stat(pid)
    if fields is not None:
        return fields[0] != "Z"
    if Path("/proc/self/stat").exists():  # Linux, and no such process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def process_started(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), where /proc tells."""
    fields, boot = _proc_stat(pid), _boot_time()
    if fields is None or boot is None or len(fields) < 20:
        return None
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def process_command(pid: int) -> tuple[str, ...] | None:
    """Process `pid`'s command line, where /proc tells."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def iso_epoch(iso: str | None) -> float | None:
    """An ISO 8601 time as seconds since the epoch (None when it does not read as one)."""
    try:
        return datetime.fromisoformat(str(iso)).timestamp()
    except (TypeError, ValueError):
        return None


def started_before(pid: int, iso: str | None) -> bool:
    """Whether `pid` started no later than `iso` (a reused pid started later); True when
    either time is unknown."""
    started, moment = process_started(pid), iso_epoch(iso)
    return started is None or moment is None or started <= moment + START_SLACK_S
