"""Populations: sample a `PopulationSpec` into persona rows and describe its composition.

Pure logic over `workbench.config`. `generate_personas` (it calls a language model) lives one floor
up in `workbench.agents.persona_writer`; it is still offered here, imported lazily on first use
(PEP 562), the floor's one declared upward import.
"""

from typing import Any

from workbench.population.persona_sets import load_persona_set, save_persona_set
from workbench.population.personas import generic_persona, persona_texts, population_note
from workbench.population.sample import counts_table, quota_assignment, sample_population
from workbench.population.shares import dimension_share_matrix, marginal_shares, quota_counts

__all__ = [
    "counts_table",
    "dimension_share_matrix",
    "generate_personas",
    "generic_persona",
    "load_persona_set",
    "marginal_shares",
    "persona_texts",
    "population_note",
    "quota_assignment",
    "quota_counts",
    "sample_population",
    "save_persona_set",
]


def __getattr__(name: str) -> Any:
    """`generate_personas` from `workbench.agents.persona_writer`, imported on first access."""
    if name == "generate_personas":
        from workbench.agents.persona_writer import generate_personas

        globals()[name] = generate_personas
        return generate_personas
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, including the lazily imported one."""
    return sorted(set(globals()) | set(__all__))
