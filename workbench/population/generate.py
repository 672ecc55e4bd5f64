"""Old import path, kept working: LLM persona writing moved to `workbench.agents.persona_writer`
and persona-set storage to `workbench.population.persona_sets`.

This shim is the population floor's one declared upward import (import-linter:
`workbench.population.generate -> workbench.agents.persona_writer`); new code imports the two
modules above directly.
"""

from workbench.agents.persona_writer import (
    BEGIN_TAG,
    DEFAULT_PARAMS,
    END_TAG,
    MAX_CHARS,
    MIN_CHARS,
    TAGGED,
    generate_personas,
    meta_prompt,
    parse_persona,
    persona_seed,
)
from workbench.population.persona_sets import METADATA_KEY, load_persona_set, save_persona_set

__all__ = [
    "BEGIN_TAG",
    "DEFAULT_PARAMS",
    "END_TAG",
    "MAX_CHARS",
    "METADATA_KEY",
    "MIN_CHARS",
    "TAGGED",
    "generate_personas",
    "load_persona_set",
    "meta_prompt",
    "parse_persona",
    "persona_seed",
    "save_persona_set",
]
