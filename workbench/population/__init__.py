"""Populations: sample a `PopulationSpec` into persona rows and describe its composition.

Pure logic over `workbench.config`. Writing personas with a language model is one floor up, in
`workbench.agents.persona_writer`.
"""

from workbench.population.persona_sets import load_persona_set, save_persona_set
from workbench.population.personas import (
    generic_persona,
    persona_texts,
    population_note,
    prompt_note,
)
from workbench.population.sample import counts_table, quota_assignment, sample_population
from workbench.population.shares import dimension_share_matrix, marginal_shares, quota_counts

__all__ = [
    "counts_table",
    "dimension_share_matrix",
    "generic_persona",
    "load_persona_set",
    "marginal_shares",
    "persona_texts",
    "population_note",
    "prompt_note",
    "quota_assignment",
    "quota_counts",
    "sample_population",
    "save_persona_set",
]
