"""The one reader of a run's `events.jsonl`: `RunFollower` folds the lines appended since its
last poll into a `RunState` (plus what the monitor wants per shard: when its round started, its
last node, pid and memory, its rounds done; and per round the work of each model engine).
`run_state` is one poll from the start, `follow` yields the events as they come. A page that
refreshes every second reads a long run's events once; the status of the run is
`RunState.true_status` (the one status, `results.current_status`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from workbench.results import read_events
from workbench.results.layout import EVENTS_FILE
from workbench.results.run_statuses import RunStatus
from workbench.runtime.events import (
    EngineWork,
    Event,
    RunFinished,
    RunStarted,
    RunState,
    ShardProgress,
    ShardState,
    event_from_dict,
)

__all__ = ["RunFollower", "ShardTrack", "follow", "run_state"]


@dataclass
class ShardTrack:
    """What a run's events say of one shard so far."""

    latest: ShardProgress
    round_started: datetime
    node: str | None = None
    pid: int | None = None
    rss_bytes: int | None = None
    rounds_done: int = 0

    def update(self, event: ShardProgress) -> None:
        """Fold one progress event of this shard."""
        if event.round != self.latest.round:
            self.round_started = datetime.fromisoformat(event.at)
        self.latest = event
        self.node = event.node or self.node
        self.pid = event.pid or self.pid
        self.rss_bytes = event.rss_bytes or self.rss_bytes
        if event.state is ShardState.DONE:
            self.rounds_done = max(self.rounds_done, event.round)


@dataclass
class RunFollower:
    """A bundle's events folded as they are appended: its `RunState`, its backend, per shard a
    `ShardTrack` and per round its model engines' work (`engines`: round -> the `engine_work`
    event's rows, the latest try of the round; none for a local run). `poll()` reads only the
    lines appended since the last call (from the start again if the file shrank, as a resume
    rewrites a partial last line)."""

    bundle: Path
    state: RunState = field(default_factory=RunState)
    backend: str | None = None
    shards: dict[int, ShardTrack] = field(default_factory=dict)
    engines: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    offset: int = 0

    def __post_init__(self) -> None:
        self.bundle = Path(self.bundle)
        self.state.bundle = self.bundle

    def _restart_if_shrunk(self) -> None:
        try:
            size = (self.bundle / EVENTS_FILE).stat().st_size
        except OSError:
            return
        if size < self.offset:
            self.state, self.backend, self.shards, self.offset = RunState(), None, {}, 0
            self.engines = {}
            self.state.bundle = self.bundle

    def events(self) -> list[Event]:
        """Read and fold the events appended since the last call; them, in order."""
        self._restart_if_shrunk()
        records, self.offset = read_events(self.bundle, self.offset)
        folded = []
        for record in records:
            event = event_from_dict(record)
            if event is None:
                continue
            self.state.apply(event)
            if isinstance(event, RunStarted):
                self.backend = event.backend
                kept = event.resumed_after  # the rounds after it are played again
                self.engines = {r: rows for r, rows in self.engines.items() if r <= kept}
            elif isinstance(event, EngineWork):
                self.engines[event.round] = [dict(row) for row in event.engines]
            elif isinstance(event, ShardProgress):
                track = self.shards.get(event.shard)
                if track is None:
                    at = datetime.fromisoformat(event.at)
                    track = self.shards[event.shard] = ShardTrack(event, round_started=at)
                track.update(event)
            folded.append(event)
        return folded

    def poll(self) -> RunState:
        """Fold the events appended since the last call; the state."""
        self.events()
        return self.state


def run_state(bundle: str | Path) -> RunState:
    """A run's state from its bundle's events.jsonl (as another process sees it)."""
    return RunFollower(Path(bundle)).poll()


def follow(
    bundle: str | Path, *, poll_s: float = 0.1, timeout_s: float | None = None
) -> Iterator[Event]:
    """Yield a run's events as they are appended, from the first, until it finishes.

    Works from another process while the run goes on; stops after a `RunFinished`, or after
    `timeout_s` seconds (TimeoutError), or when the run is dead (its writer died without
    finishing: the last event yielded is then a synthetic `RunFinished` with status "dead").
    """
    follower = RunFollower(Path(bundle))
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        events = follower.events()
        for event in events:
            yield event
            if isinstance(event, RunFinished):
                return
        state = follower.state
        if not events and state.status == RunStatus.RUNNING and state.true_status == RunStatus.DEAD:
            late = follower.events()  # it may have finished meanwhile
            yield from late
            if any(isinstance(e, RunFinished) for e in late):
                return
            yield RunFinished(
                run_id=state.run_id or "",
                status=RunStatus.DEAD,
                rounds_done=state.rounds_done,
                error=f"the writing process (pid {state.pid}) died without finishing",
                bundle=str(follower.bundle),
            )
            return
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{follower.bundle}: no run_finished event within {timeout_s} s")
        if not events:
            time.sleep(poll_s)
