"""A run's statuses, what each one allows, and the command that resumes a run: one home.

`RunStatus` is a `str` enum, so a manifest's or an event's plain "failed" compares equal to
`RunStatus.FAILED` and a status written to JSON stays the plain word. The manifest holds one of
`MANIFEST_STATUSES`; "dead" is never written: it is what `results.current_status.run_status`
reads for a run recorded as running whose writer is gone. Light on purpose (no pyarrow): the
events' reader and the page import it at start.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from workbench.errors import NO_RESUME

__all__ = [
    "FINISH_STATUSES",
    "MANIFEST_STATUSES",
    "RESUME",
    "RunStatus",
    "resume_command",
    "resume_hint",
]


class RunStatus(StrEnum):
    """The one status of a run: running, complete, failed, cancelled or dead."""

    RUNNING = "running"
    COMPLETE = "complete"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DEAD = "dead"

    @property
    def is_final(self) -> bool:
        """Whether the run is over (nothing writes it now; a dead run can still be resumed)."""
        return self is not RunStatus.RUNNING

    @property
    def resumable(self) -> bool:
        """Whether `workbench run --resume` may finish it: failed, cancelled or dead."""
        return self in (RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.DEAD)

    @classmethod
    def of(cls, value: object) -> RunStatus | None:
        """`value` as a status, None when it is none (a damaged manifest, "unknown")."""
        try:
            return cls(value)
        except ValueError:
            return None


MANIFEST_STATUSES: tuple[RunStatus, ...] = (
    RunStatus.RUNNING,
    RunStatus.COMPLETE,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
)
"""Every status a manifest can hold (a writer says running, then how it finished)."""

FINISH_STATUSES: tuple[RunStatus, ...] = tuple(s for s in MANIFEST_STATUSES if s.is_final)
"""The statuses `BundleWriter.finish()` may set."""

RESUME = "workbench run --resume"
"""The command that finishes a failed, cancelled or dead bundle, before the bundle's path."""


def resume_command(bundle: str | Path) -> str:
    """The command line that finishes `bundle` (said with every error a resume can fix)."""
    return f"{RESUME} {bundle}"


def resume_hint(
    status: object, error: str | None, bundle: str | Path, *, unless_said: bool = False
) -> str | None:
    """The resume command for a run in `status` that stopped with `error`, or None: while it
    runs or once complete, when its error says a resume would replay the same prompts
    (NO_RESUME), and with `unless_said` when the error already gives the command."""
    known = RunStatus.of(status)
    said = error or ""
    if known is None or not known.resumable or NO_RESUME in said:
        return None
    return None if unless_said and RESUME in said else resume_command(bundle)
