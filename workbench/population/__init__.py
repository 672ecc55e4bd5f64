"""Populations: sample a `PopulationSpec` into persona rows and describe its composition."""

from workbench.population.generate import generate_personas, load_persona_set, save_persona_set
from workbench.population.personas import generic_persona, persona_texts, population_note
from workbench.population.sample import (
    counts_table,
    dimension_share_matrix,
    marginal_shares,
    quota_assignment,
    quota_counts,
    sample_population,
)

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
