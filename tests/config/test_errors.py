"""The Python API raises the ConfigError the YAML path reports, and old names still import."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import workbench.config as config
from workbench.config import (
    POLICY_KINDS,
    BackendSpec,
    GameSpec,
    LevelKPolicySpec,
    ModelSpec,
    PopulationSpec,
    RandomPolicySpec,
    RunConfig,
    validate,
)
from workbench.errors import ConfigError

POPULATION: dict[str, Any] = {"dimensions": [{"name": "g", "shares": {"a": 0.5, "b": 0.5}}]}

OLD_PUBLIC_NAMES = [
    "SHARE_TOLERANCE", "StrictModel", "parse_number", "template_fields", "PromptSpec",
    "GameSpec", "DimensionSpec", "PopulationSpec", "LLMPolicySpec", "RandomPolicySpec",
    "LevelKPolicySpec", "PolicySpec", "PARALLEL_SIZES", "ModelSpec", "BackendSpec",
    "OutputSpec", "PopulationField", "RunConfig", "M", "format_validation_error", "parse_yaml",
    "read_yaml", "validate", "load_population_spec", "load_run_config", "resolve_population",
    "to_yaml", "save_yaml",
]  # fmt: skip
"""Every public name of the single-module `workbench.config` before it became a package."""


def one_line(error: pytest.ExceptionInfo[ConfigError]) -> str:
    """The error's message, checked to be one line."""
    message = str(error.value)
    assert "\n" not in message
    return message


def test_old_public_names_still_import() -> None:
    missing = [name for name in OLD_PUBLIC_NAMES if not hasattr(config, name)]
    assert not missing
    assert set(config.__all__) >= set(OLD_PUBLIC_NAMES)
    assert all(hasattr(config, name) for name in config.__all__)


def test_policy_kinds_are_read_off_the_union() -> None:
    assert POLICY_KINDS == ("llm", "random", "level_k")
    assert {("policy", kind) for kind in POLICY_KINDS} <= RunConfig.union_tags


def test_constructing_a_spec_raises_config_error_named_after_the_class() -> None:
    with pytest.raises(ConfigError) as info:
        GameSpec(ratio=2)
    assert one_line(info) == "GameSpec: ratio: must be in (0, 1], got 2.0"


def test_config_error_is_still_a_value_error() -> None:
    with pytest.raises(ValueError, match="GameSpec: rounds"):
        GameSpec(rounds=0)


def test_assignment_raises_config_error() -> None:
    run = RunConfig(population=POPULATION, policy={"kind": "random"})
    with pytest.raises(ConfigError) as info:
        run.game.rounds = -1
    assert one_line(info) == "GameSpec: rounds: must be at least 1, got -1"
    assert run.game.rounds == 1
    with pytest.raises(ConfigError, match="^RunConfig: n_agents: "):
        run.n_agents = 0


def test_model_validator_errors_on_assignment() -> None:
    game = GameSpec()
    with pytest.raises(ConfigError, match="^GameSpec: low must be < high, got low=200"):
        game.low = 200


def test_nested_errors_keep_the_outer_path_and_drop_union_tags() -> None:
    with pytest.raises(ConfigError) as info:
        RunConfig(population=POPULATION, policy={"kind": "random", "latency_s": -1})
    assert one_line(info) == ("RunConfig: policy.latency_s: must be at least 0, got -1")
    with pytest.raises(ConfigError) as info:
        RunConfig(population={"dimensions": [{"name": "g", "shares": {"a": 0.3}}]})
    assert one_line(info).startswith("RunConfig: population.dimensions.0: dimension 'g'")


def test_model_validate_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="^BackendSpec: "):
        BackendSpec.model_validate({"kind": "local", "address": "auto"})
    with pytest.raises(ConfigError, match="^ModelSpec: temperature: "):
        ModelSpec.model_validate({"temperature": 5})


def test_validate_still_names_the_file() -> None:
    with pytest.raises(ConfigError) as info:
        validate(RunConfig, {"population": POPULATION, "game": {"ratio": 2}}, "run.yaml")
    assert one_line(info) == "run.yaml: game.ratio: must be in (0, 1], got 2.0"


def test_unknown_keys_in_python_are_config_errors() -> None:
    with pytest.raises(ConfigError) as info:
        RandomPolicySpec(latncy_s=1)  # type: ignore[call-arg]
    assert "RandomPolicySpec: latncy_s: unknown key; remove it or check its spelling" == one_line(
        info
    )


def test_valid_specs_build_and_copy_as_before(tmp_path: Path) -> None:
    run = RunConfig(population=POPULATION, policy=LevelKPolicySpec(), n_agents=7)
    assert isinstance(run.population, PopulationSpec)
    assert run.model_copy(update={"n_agents": 9}).n_agents == 9
    run.n_agents = 11
    assert run.n_agents == 11
    assert RunConfig.model_validate(run.model_dump()) == run
    assert config.load_run_config(config.save_yaml(run, tmp_path / "r.yaml")) == run
    assert not [p for p in tmp_path.iterdir() if p.name != "r.yaml"]  # no temp file left


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"dimensions": []}, "dimensions: needs at least 1 dimension; add one"),
        ({**POPULATION, "sampling": "random"}, "sampling: must be 'quota' or 'iid', got 'random'"),
        ({**POPULATION, "name": ""}, "name: must not be empty"),
        ({**POPULATION, "size": 3}, "size: unknown key; remove it or check its spelling"),
        ({"name": "p"}, "dimensions: required field is missing; add it"),
        (
            {"dimensions": [{"name": "bad name", "shares": {"a": 1}}]},
            "dimensions.0.name: must be letters, digits and _, not starting with a digit, got "
            "'bad name'",
        ),
    ],
)
def test_a_population_specs_problems_read_in_plain_words(data: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate(PopulationSpec, data, "pop.yaml")
    assert one_line(info) == f"pop.yaml: {says}"
    loc, text = info.value.problems[0]  # the same problem, by field, for a form
    assert f"{loc}: {text}" == says


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"n_agents": "many"}, "n_agents: must be a whole number, got 'many'"),
        ({"seed": -1}, "seed: must be at least 0, got -1"),
        ({"n_agents": 10**9}, "n_agents: must be at most 100000000, got 1000000000"),
        ({"max_failed_share": 2}, "max_failed_share: must be at most 1, got 2"),
        (
            {"policy": {"kind": "nope"}},
            "policy: kind must be one of 'llm', 'random', 'level_k', got 'nope'",
        ),
        ({"policy": {"depth": 1}}, "policy: needs its kind; add a kind key"),
        ({"model": {"base_urls": "x"}}, "model.base_urls: must be a list, got 'x'"),
        (
            {"name": "a b"},
            "name: must be letters, digits, _ . and -, starting with a letter or digit, got 'a b'",
        ),
    ],
)
def test_a_run_configs_problems_read_in_plain_words(changes: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate(RunConfig, {"population": POPULATION} | changes, "run.yaml")
    assert one_line(info) == f"run.yaml: {says}"
    assert "Input should" not in one_line(info) and "^" not in one_line(info)


def test_one_field_is_checked_by_its_specs_own_rules() -> None:
    assert config.field_problem(RunConfig, "n_agents", 5) is None
    assert config.field_problem(RunConfig, "n_agents", -5) == "must be at least 1, got -5"
    assert config.field_problem(RunConfig, "seed", None) == "must be a whole number, got None"
