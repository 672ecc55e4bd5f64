"""Running games: the Simulation over rounds, its events, and the backends that host shards."""

from workbench.runtime.backend import Backend, make_backend
from workbench.runtime.events import (
    Event,
    EventBus,
    RoundFinished,
    RunFinished,
    RunStarted,
    RunState,
    ShardProgress,
    follow,
    run_state,
)
from workbench.runtime.local import LocalBackend, play_shard
from workbench.runtime.simulation import Simulation, run

__all__ = [
    "Backend",
    "Event",
    "EventBus",
    "LocalBackend",
    "RoundFinished",
    "RunFinished",
    "RunStarted",
    "RunState",
    "ShardProgress",
    "Simulation",
    "follow",
    "make_backend",
    "play_shard",
    "run",
    "run_state",
]
