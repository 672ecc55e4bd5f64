"""Pydantic models for every spec the workbench reads, with safe YAML in and out.

A `RunConfig` names a population, a game, a policy, a model and a backend. Every model forbids
unknown keys and validates its own ranges, so a bad file fails with one message that names the
field, what is allowed and what came (`load_run_config`, `load_population_spec`); building or
changing a spec in Python raises the same `ConfigError`, named after the spec's class.

One module per spec: `base` (StrictModel, value helpers), `game`, `population`, `policy`,
`model`, `backend`, `run` (RunConfig), `yaml_io` (files). This face re-exports them all.
"""

from workbench.config.backend import BackendSpec
from workbench.config.base import (
    MAX_FORMAT_WIDTH,
    SHARE_TOLERANCE,
    StrictModel,
    UnionTags,
    field_problem,
    format_validation_error,
    fraction_text,
    parse_number,
    spec_errors,
    template_fields,
)
from workbench.config.game import GAME_BOUND, GameSpec, PromptSpec
from workbench.config.model import PARALLEL_SIZES, ModelSpec
from workbench.config.overrides import (
    KEY_PATTERN,
    apply_overrides,
    check_keys,
    overridable,
    parse_assignments,
    with_overrides,
)
from workbench.config.policy import (
    EXTRACT_NUMBER_CHOICES,
    POLICY_KINDS,
    POLICY_SPECS,
    ExtractNumber,
    LevelKPolicySpec,
    LLMPolicySpec,
    PolicySpec,
    RandomPolicySpec,
    extract_mode,
)
from workbench.config.population import RESERVED_COLUMNS, DimensionSpec, PopulationSpec
from workbench.config.run import (
    MAX_AGENTS,
    MAX_NAME_LENGTH,
    UNION_TAGS,
    OutputSpec,
    PopulationField,
    RunConfig,
)
from workbench.config.yaml_io import (
    MAX_YAML_DEPTH,
    M,
    YAMLDepthError,
    load_population_spec,
    load_run_config,
    parse_population_spec,
    parse_run_config,
    parse_yaml,
    read_yaml,
    read_yaml_text,
    resolve_population,
    save_yaml,
    to_yaml,
    validate,
)

__all__ = [
    "KEY_PATTERN",
    "apply_overrides",
    "check_keys",
    "overridable",
    "parse_assignments",
    "with_overrides",
    "EXTRACT_NUMBER_CHOICES",
    "GAME_BOUND",
    "MAX_AGENTS",
    "MAX_FORMAT_WIDTH",
    "MAX_NAME_LENGTH",
    "MAX_YAML_DEPTH",
    "PARALLEL_SIZES",
    "POLICY_KINDS",
    "POLICY_SPECS",
    "RESERVED_COLUMNS",
    "SHARE_TOLERANCE",
    "UNION_TAGS",
    "BackendSpec",
    "DimensionSpec",
    "ExtractNumber",
    "GameSpec",
    "LLMPolicySpec",
    "LevelKPolicySpec",
    "M",
    "ModelSpec",
    "OutputSpec",
    "PolicySpec",
    "PopulationField",
    "PopulationSpec",
    "PromptSpec",
    "RandomPolicySpec",
    "RunConfig",
    "StrictModel",
    "UnionTags",
    "YAMLDepthError",
    "field_problem",
    "format_validation_error",
    "fraction_text",
    "extract_mode",
    "load_population_spec",
    "load_run_config",
    "parse_number",
    "parse_population_spec",
    "parse_run_config",
    "parse_yaml",
    "read_yaml",
    "read_yaml_text",
    "resolve_population",
    "save_yaml",
    "spec_errors",
    "template_fields",
    "to_yaml",
    "validate",
]
