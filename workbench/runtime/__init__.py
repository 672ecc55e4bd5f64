"""Running games: the Simulation over rounds and the backends that host agent shards."""

from workbench.runtime.local import LocalBackend, play_shard
from workbench.runtime.simulation import Simulation, run

__all__ = ["LocalBackend", "Simulation", "play_shard", "run"]
