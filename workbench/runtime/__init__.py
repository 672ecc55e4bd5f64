"""Running games: the Simulation over rounds, its events, and the backends that host shards.

The names load on first use (PEP 562): a process that only follows a run's events
(`workbench.runtime.events`) does not pay for the Simulation's pandas and pyarrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

_HOMES: dict[str, str] = {
    "Backend": "workbench.runtime.backend",
    "make_backend": "workbench.runtime.backend",
    "Event": "workbench.runtime.events",
    "EventBus": "workbench.runtime.events",
    "RoundFinished": "workbench.runtime.events",
    "RunFinished": "workbench.runtime.events",
    "RunStarted": "workbench.runtime.events",
    "RunState": "workbench.runtime.events",
    "ShardProgress": "workbench.runtime.events",
    "LocalBackend": "workbench.runtime.local",
    "play_shard": "workbench.runtime.local",
    "Simulation": "workbench.runtime.simulation",
    "run": "workbench.runtime.simulation",
}

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
    "make_backend",
    "play_shard",
    "run",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())

if TYPE_CHECKING:
    from workbench.runtime.backend import Backend, make_backend
    from workbench.runtime.events import (
        Event,
        EventBus,
        RoundFinished,
        RunFinished,
        RunStarted,
        RunState,
        ShardProgress,
    )
    from workbench.runtime.local import LocalBackend, play_shard
    from workbench.runtime.simulation import Simulation, run
