"""A run's events: typed records of what happened, for every subscriber and for the bundle.

The Simulation and the backends emit a small stream: the run started (bundle path, config),
a shard's progress within a round (agents answered, errors by status, tokens, where it ran),
a round finished (its statistics), the run finished, failed or was cancelled (with the error).
tqdm, the CLI's round table, `on_round` callbacks, the dashboard and the cluster monitor are
subscribers of an `EventBus`; the bundle's `events.jsonl` is one more, so another process (a
dashboard that restarted) can follow a live run from disk (`workbench.runs.follow`: the one
reader of events.jsonl) and fold it into a `RunState`.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from workbench.results.run_statuses import UNKNOWN, RunStatus


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every event: its kind, the run it belongs to and when it happened (UTC)."""

    kind: ClassVar[str] = "event"
    run_id: str = ""
    at: str = field(default_factory=_now)

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON data, with its `kind`."""
        return {"kind": self.kind, **dataclasses.asdict(self)}


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    """A run began writing its bundle (or a resumed run continued after `resumed_after` rounds)."""

    kind: ClassVar[str] = "run_started"
    bundle: str
    config: dict[str, Any]
    rounds: int
    n_agents: int
    backend: str
    resumed_after: int = 0
    pid: int = field(default_factory=os.getpid)
    host: str = field(default_factory=socket.gethostname)


class ShardState(StrEnum):
    """A shard's state in a round: PLAYING from its start until its decisions are in (DONE).
    STOPPED is never emitted: it is how a page shows a shard still playing once its run is over
    (`runs.shards.shown_state`). A `str` enum, so events.jsonl keeps the plain word and every
    bundle's events read back the same."""

    PLAYING = "playing"
    DONE = "done"
    STOPPED = "stopped"


@dataclass(frozen=True, kw_only=True)
class ShardProgress(Event):
    """A shard's progress in a round: `answered` of `agents`, errors by status, tokens, place.

    `state` is PLAYING when the shard starts the round and DONE when its decisions are in.
    """

    kind: ClassVar[str] = "shard_progress"
    round: int
    shard: int
    agents: int
    answered: int = 0
    state: ShardState = ShardState.PLAYING
    errors: dict[str, int] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    seconds: float = 0.0
    node: str | None = None
    pid: int | None = None
    rss_bytes: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", ShardState(self.state))  # a read event's plain word


@dataclass(frozen=True, kw_only=True)
class RoundFinished(Event):
    """A round's statistics are in the bundle (mean, target, winners, seconds, ...)."""

    kind: ClassVar[str] = "round_finished"
    round: int
    stats: dict[str, Any]
    failures: int = 0


@dataclass(frozen=True, kw_only=True)
class EngineWork(Event):
    """What each model engine did in a round, one entry per engine with the fields of
    `results.layout.ENGINE_WORK_FIELDS` (distribution mode on Ray's model actors, or on a served
    model's several endpoints)."""

    kind: ClassVar[str] = "engine_work"
    round: int
    engines: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class RunFinished(Event):
    """The run ended: complete, failed or cancelled; `error` says why when it did not complete."""

    kind: ClassVar[str] = "run_finished"
    status: str
    rounds_done: int
    error: str | None = None
    bundle: str = ""


def round_note(stats: Mapping[str, Any]) -> str:
    """What a round's statistics must not hide, for tables and bars: "no valid answers" (its
    mean and target are nan) and "<k> failed" (answers whose model call failed); "" if neither."""
    notes = []
    if _count(stats.get("n_valid")) == 0:
        notes.append("no valid answers")
    failed = _count(stats.get("n_failed"))
    if failed:
        notes.append(f"{failed} failed")
    return ", ".join(notes)


def _count(value: Any) -> int | None:
    """A count from a stats row (an int, a numpy or float number); None when unknown or nan."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else int(number)


def rss_bytes() -> int | None:
    """This process's resident memory now (Linux /proc), None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def shard_done(
    decisions: Any, round_number: int, shard: int, seconds: float, node: str | None = None
) -> ShardProgress:
    """The DONE progress of a shard from its decisions table (an Arrow table)."""
    import pyarrow.compute as pc

    statuses = pc.value_counts(decisions.column("status")).to_pylist()
    errors = {str(s["values"]): int(s["counts"]) for s in statuses if s["values"] != "ok"}
    n = decisions.num_rows

    def total(name: str) -> int:
        return int(pc.sum(decisions.column(name)).as_py() or 0) if n else 0

    latency = pc.mean(decisions.column("latency_s")).as_py() if n else None
    return ShardProgress(
        round=round_number,
        shard=shard,
        agents=n,
        answered=n,
        state=ShardState.DONE,
        errors=errors,
        prompt_tokens=total("prompt_tokens"),
        completion_tokens=total("completion_tokens"),
        latency_s=float(latency or 0.0),
        seconds=seconds,
        node=node,
        pid=os.getpid(),
        rss_bytes=rss_bytes(),
    )


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls for cls in (RunStarted, ShardProgress, RoundFinished, EngineWork, RunFinished)
}


def event_from_dict(data: Mapping[str, Any]) -> Event | None:
    """The typed event a JSON record holds; None for a kind this version does not know."""
    cls = EVENT_TYPES.get(str(data.get("kind")))
    if cls is None:
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


Subscriber = Callable[[Event], None]


class EventBus:
    """Delivers each emitted event to every subscriber, in subscription order.

    A subscriber that raises does not stop the delivery to the others, nor the run: its error
    is kept in `errors` and reported once per subscriber as a RuntimeWarning.
    """

    def __init__(self, subscribers: list[Subscriber] | None = None) -> None:
        self._subscribers: list[Subscriber] = list(subscribers or [])
        self.errors: list[str] = []
        self._warned: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Subscriber:
        """Add a subscriber; returns it (so it can be used as a decorator)."""
        self._subscribers.append(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Remove a subscriber if present."""
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    def emit(self, event: Event) -> None:
        """Deliver `event` to every subscriber."""
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception as exc:  # a subscriber's bug must not stop the run
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if subscriber not in self._warned:
                    self._warned.append(subscriber)
                    warnings.warn(
                        f"event subscriber {subscriber!r} failed on {event.kind}: "
                        f"{type(exc).__name__}: {exc}",
                        RuntimeWarning,
                        stacklevel=2,
                    )


@dataclass
class RunState:
    """What a follower knows of a run from its events: status, rounds, shards' latest progress.

    `status` is what the events say; `true_status` is the run's one status
    (`results.current_status.run_status` of `bundle`: a run whose writer died reads "dead").
    """

    status: str = UNKNOWN
    run_id: str | None = None
    rounds: int = 0
    rounds_done: int = 0
    error: str | None = None
    shards: dict[int, ShardProgress] = field(default_factory=dict)
    stats: list[dict[str, Any]] = field(default_factory=list)
    pid: int | None = None
    host: str | None = None
    bundle: Path | None = None
    n_agents: int = 0
    started_at: str | None = None
    finished_at: str | None = None

    def apply(self, event: Event) -> None:
        """Update the state with one event."""
        self.run_id = event.run_id
        if isinstance(event, RunStarted):
            self.status, self.rounds = RunStatus.RUNNING, event.rounds
            self.rounds_done, self.error = event.resumed_after, None
            self.pid, self.host = event.pid, event.host
            self.stats = self.stats[: event.resumed_after]
            self.n_agents, self.started_at, self.finished_at = event.n_agents, event.at, None
        elif isinstance(event, ShardProgress):
            self.shards[event.shard] = event
        elif isinstance(event, RoundFinished):
            self.rounds_done = event.round
            self.stats = [*self.stats[: event.round - 1], {"round": event.round, **event.stats}]
        elif isinstance(event, RunFinished):
            self.status, self.error, self.rounds_done = event.status, event.error, event.rounds_done
            self.finished_at = event.at

    @property
    def true_status(self) -> str:
        """The run's one status (`results.current_status.run_status` of its bundle): running,
        complete, failed, cancelled or dead; the events' `status` while no bundle manifest
        reads."""
        if self.bundle is None:
            return self.status
        from workbench.results.current_status import run_status  # here: results loads pyarrow

        try:
            return run_status(self.bundle)
        except ValueError:
            return self.status
