"""The Run tab's status line: the round in play, its answers so far, the time taken and the
time left, in words.

While a run plays, the line says "round 2 of 3" (the round in play, not the rounds finished),
the answers its shards have reported in that round, the time since the run started, and the
time left: from Check's estimate when the run was launched with one (what is left of the
estimated seconds), else at the run's own pace so far (the share of its agent-rounds done in
the time taken). Both are labelled with where they come from. A finished run says how long it
took, beside the estimate when there was one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self

from workbench.results.run_statuses import RunStatus
from workbench.runs.launch_states import LaunchState
from workbench.ui.safe_text import md
from workbench.ui.workspace import shown_path

__all__ = ["IDLE", "RunClock", "duration", "seconds_between", "status_line"]

IDLE = (
    "no run followed: choose the settings below and press **Run** (finished runs are under "
    "Recent launches and on the Results tab)"
)
"""The status line while no run is followed."""


def duration(seconds: float) -> str:
    """Seconds in words a person reads at a glance: "45 s", "3 min 20 s", "1 h 05 min"."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def seconds_between(start: str | None, end: str | None = None) -> float | None:
    """Seconds from ISO time `start` to `end` (now when None); None without a start."""
    if not start:
        return None
    try:
        begun = datetime.fromisoformat(start)
        ended = datetime.fromisoformat(end) if end else datetime.now(UTC)
    except ValueError:
        return None
    return max(0.0, (ended - begun).total_seconds())


@dataclass(frozen=True)
class RunClock:
    """Where a followed run stands: rounds, the answers in the round in play, times."""

    status: str
    rounds_done: int
    rounds: int
    n_agents: int = 0
    answered: int = 0
    elapsed_s: float | None = None
    estimate_s: float | None = None

    @classmethod
    def of(cls, state: LaunchState, estimate_s: float | None = None) -> Self:
        """Where a run stands now, from its events (the answers in the round in play, the
        time since it started) and the estimate it was launched with."""
        run = state.run
        answered, elapsed = 0, None
        if run is not None:
            playing = state.rounds_done + 1
            answered = sum(p.answered for p in run.shards.values() if p.round == playing)
            if not (state.finished and run.finished_at is None):  # dead: no end to count to
                elapsed = seconds_between(run.started_at, run.finished_at)
        return cls(
            status=state.status,
            rounds_done=state.rounds_done,
            rounds=state.rounds,
            n_agents=run.n_agents if run is not None else 0,
            answered=answered,
            elapsed_s=elapsed,
            estimate_s=estimate_s,
        )

    @property
    def playing(self) -> bool:
        return self.status == RunStatus.RUNNING and self.rounds_done < self.rounds

    def done_share(self) -> float:
        """The share of the run's agent-rounds answered (0 to 1)."""
        if self.rounds <= 0:
            return 0.0
        in_round = min(self.answered / self.n_agents, 1.0) if self.n_agents > 0 else 0.0
        return min((self.rounds_done + (in_round if self.playing else 0.0)) / self.rounds, 1.0)

    def left_s(self) -> tuple[float, str] | None:
        """(seconds left, where that comes from), or None while it cannot be said."""
        if self.elapsed_s is None:
            return None
        if self.estimate_s is not None:
            return max(self.estimate_s - self.elapsed_s, 0.0), "by the estimate"
        share = self.done_share()
        if share <= 0:
            return None
        return self.elapsed_s / share - self.elapsed_s, "at this run's pace"

    def parts(self) -> list[str]:
        """The line's parts after the status, in order."""
        if self.playing:
            parts = [f"round {self.rounds_done + 1} of {self.rounds}"]
            if self.n_agents:
                parts.append(f"{self.answered:,} of {self.n_agents:,} answers in")
            if self.elapsed_s is not None:
                parts.append(f"{duration(self.elapsed_s)} so far")
            left = self.left_s()
            if left is not None:
                parts.append(f"about {duration(left[0])} left {left[1]}")
            return parts
        parts = [f"{self.rounds_done} of {self.rounds} rounds"]
        if self.elapsed_s is not None and self.status != RunStatus.RUNNING:
            took = f"took {duration(self.elapsed_s)}"
            if self.estimate_s is not None:
                took += f" (estimated {duration(self.estimate_s)})"
            parts.append(took)
        return parts


def status_line(status: str, clock: RunClock | None, bundle: str | None) -> str:
    """The Run tab's status line, as escaped Markdown: the status, where the run stands, and
    its bundle as `workbench run` prints it."""
    if not status:
        return IDLE
    parts = [md(p) for p in clock.parts()] if clock is not None else []
    where = [f"bundle {md(shown_path(bundle))}"] if bundle else []
    return " · ".join([f"**{md(status)}**", *parts, *where])
