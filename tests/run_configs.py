"""Small run configs for tests: one builder, so a test names only what it sets.

`run_config(population, ...)` validates a RunConfig the way a YAML file is read
(`RunConfig.model_validate`); `HALVES` is the smallest population a bundle test needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench.config import PopulationSpec, RunConfig

HALVES: dict[str, Any] = {
    "dimensions": [{"name": "gender", "shares": {"male": 0.5, "female": 0.5}}]
}
"""One dimension, two genders at half each."""


def run_config(
    population: PopulationSpec | Mapping[str, Any] | str | Path,
    *,
    rounds: int = 2,
    game: Mapping[str, Any] | None = None,
    agents_per_shard: int | None = None,
    **fields: Any,
) -> RunConfig:
    """A validated RunConfig of `population` (a spec, its data or a YAML path) playing
    `rounds` rounds (`game`: the game section's other keys), in shards of `agents_per_shard`
    (None: the default shards), with `fields` as its other top-level keys (name, seed,
    n_agents, policy, model, output, ...); a key left out keeps RunConfig's default."""
    if isinstance(population, PopulationSpec):
        population = population.model_dump(mode="json")
    data: dict[str, Any] = {
        "population": str(population) if isinstance(population, Path) else population,
        "game": {"rounds": rounds, **(game or {})},
        **fields,
    }
    if agents_per_shard is not None:
        data["backend"] = {"agents_per_shard": agents_per_shard}
    return RunConfig.model_validate(data)


def small_config(**fields: Any) -> RunConfig:
    """The bundle tests' config: four agents of `HALVES`, two rounds (`fields`: as
    `run_config`'s)."""
    return run_config(HALVES, n_agents=4, **fields)
