"""A run's statuses, what each one allows (`can_resume`), the word for a status not known
(UNKNOWN) and the command that resumes a run: one home.

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
    "UNKNOWN",
    "RunStatus",
    "can_resume",
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
        """`value` as a status, None when it is none (a damaged manifest, UNKNOWN)."""
        try:
            return cls(value)
        except ValueError:
            return None


UNKNOWN = "unknown"
"""What a status reads when it is not known (a bundle that does not open, a run that is not in
the folder asked, a run whose events said nothing yet), and a bundle row's field its manifest
does not hold readably: the one word for it, never a `RunStatus`."""


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


def can_resume(status: object, resumable: bool | None = None, error: str | None = None) -> bool:
    """Whether `workbench run --resume` may finish a run in `status`: never while it runs, once
    complete or when its status is not known; else what its manifest records (`resumable`, set
    when a run fails). A bundle written before that field (`resumable` None) falls back to its
    error's text: resumable unless it says NO_RESUME (the one place that still reads it)."""
    known = RunStatus.of(status)
    if known is None or not known.resumable:
        return False
    if resumable is not None:
        return resumable
    return NO_RESUME not in (error or "")


def resume_hint(
    status: object,
    error: str | None,
    bundle: str | Path,
    *,
    resumable: bool | None = None,
    unless_said: bool = False,
) -> str | None:
    """The resume command for a run in `status` that stopped with `error`, or None where a
    resume cannot finish it (`can_resume`, with the manifest's `resumable`), and with
    `unless_said` when the error already gives the command."""
    if not can_resume(status, resumable, error):
        return None
    return None if unless_said and RESUME in (error or "") else resume_command(bundle)
