"""Hardened edges at the config boundary: each gives one ConfigError line naming field and fix.

Each edge is tried from Python and from a YAML file; none may raise anything but ConfigError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbench.config import (
    GAME_BOUND,
    MAX_AGENTS,
    MAX_FORMAT_WIDTH,
    MAX_NAME_LENGTH,
    MAX_YAML_DEPTH,
    GameSpec,
    PopulationSpec,
    RunConfig,
    YAMLDepthError,
    load_population_spec,
    load_run_config,
    parse_yaml,
    read_yaml,
    template_fields,
    validate,
)
from workbench.errors import ConfigError

DIMENSIONS = [{"name": "gender", "shares": {"male": 0.5, "female": 0.5}}]
POPULATION: dict[str, Any] = {"dimensions": DIMENSIONS}


def message_of(build: Any) -> str:
    """The one-line message of the ConfigError that `build()` raises."""
    with pytest.raises(ConfigError) as info:
        build()
    message = str(info.value)
    assert "\n" not in message
    return message


def write_run(tmp_path: Path, **changes: Any) -> Path:
    """A run config file (JSON is YAML) with the given top-level keys."""
    data = {"population": POPULATION, "policy": {"kind": "random"}, **changes}
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- run name


def test_name_too_long_for_a_bundle_folder(tmp_path: Path) -> None:
    name = "n" * (MAX_NAME_LENGTH + 1)
    python = message_of(lambda: RunConfig(name=name, population=POPULATION))
    assert python.startswith(f"RunConfig: name: at most {MAX_NAME_LENGTH} characters")
    assert "use a shorter name" in python and name not in python
    path = write_run(tmp_path, name=name)
    assert message_of(lambda: load_run_config(path)) == python.replace("RunConfig", str(path), 1)


def test_longest_allowed_name_fits_a_file_name() -> None:
    run = RunConfig(name="n" * MAX_NAME_LENGTH, population=POPULATION)
    bundle_folder = f"{run.name}-20260101-120000-abcd"
    assert len(bundle_folder.encode()) <= 255


# --------------------------------------------------------------------------- game range


@pytest.mark.parametrize("field", ["low", "high", "offset"])
def test_game_numbers_beyond_the_bound(field: str, tmp_path: Path) -> None:
    value = -1e308 if field == "low" else 1e308
    python = message_of(lambda: GameSpec(**{field: value}))
    assert python.startswith(f"GameSpec: {field}: must be between -1e+12 and 1e+12")
    assert "overflow" in python and "got" in python
    path = write_run(tmp_path, game={field: value})
    assert message_of(lambda: load_run_config(path)).startswith(f"{path}: game.{field}: ")


def test_the_widest_allowed_game_keeps_statistics_finite() -> None:
    import statistics

    game = GameSpec(low=-GAME_BOUND, high=GAME_BOUND, offset=GAME_BOUND)
    guesses = [game.low, game.high, game.high]
    mean = statistics.fmean(guesses)
    target = game.offset + game.ratio * mean
    sd = statistics.pstdev(guesses)
    assert all(abs(x) < 1e300 for x in (mean, target, sd))


# --------------------------------------------------------------------------- persona template


@pytest.mark.parametrize(
    "template",
    ["{gender:>999999999}", "{gender:.5000}", "A {gender!r:x^1001}", "{gender:{gender}}"],
)
def test_persona_template_with_huge_or_dynamic_widths(template: str, tmp_path: Path) -> None:
    python = message_of(lambda: PopulationSpec(dimensions=DIMENSIONS, persona_template=template))
    assert python.startswith("PopulationSpec: persona_template: {gender")
    path = tmp_path / "pop.yaml"
    path.write_text(json.dumps({**POPULATION, "persona_template": template}), encoding="utf-8")
    from_file = message_of(lambda: load_population_spec(path))
    assert from_file == python.replace("PopulationSpec", str(path), 1)


def test_modest_widths_are_fine() -> None:
    template = f"{{gender:>{MAX_FORMAT_WIDTH}}} {{gender:0>8}} {{gender:.3}} {{gender!s:^20}}"
    assert template_fields(template) == ["gender"]
    spec = PopulationSpec(dimensions=DIMENSIONS, persona_template=template)
    assert spec.persona_template == template


def test_template_width_check_is_a_plain_value_error() -> None:
    with pytest.raises(ValueError) as info:
        template_fields("{a:>1001}")
    assert not isinstance(info.value, ConfigError)


# --------------------------------------------------------------------------- YAML depth


DEEP_TEXTS = {
    "flow": "[" * 100_000,
    "block": "a:\n" + "".join("  " * level + "a:\n" for level in range(1, 5000)),
    "mixed": "- " * 3000 + "x\n",
}


@pytest.mark.parametrize("text", DEEP_TEXTS.values(), ids=DEEP_TEXTS.keys())
def test_yaml_nested_thousands_deep(text: str, tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    expected = f"{path}: YAML nested deeper than {MAX_YAML_DEPTH} levels; "
    assert message_of(lambda: read_yaml(path)).startswith(expected)
    assert message_of(lambda: load_run_config(path)).startswith(expected)
    with pytest.raises(YAMLDepthError):
        parse_yaml(text)


def test_deep_python_data_is_refused_before_pydantic() -> None:
    data: dict[str, Any] = {}
    inner = data
    for _ in range(10_000):
        inner["population"] = {}
        inner = inner["population"]
    message = message_of(lambda: validate(RunConfig, data, "api"))
    assert message.startswith(f"api: YAML nested deeper than {MAX_YAML_DEPTH} levels")


def test_aliases_do_not_multiply_the_depth_walk() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    data = parse_yaml("\n".join(lines) + "\n")  # 10**9 leaves if expanded
    message = message_of(lambda: validate(GameSpec, data, "laughs.yaml"))
    assert message.startswith("laughs.yaml: a0: unknown key")


def test_ordinary_nesting_is_fine() -> None:
    text = "a:\n" + "".join("  " * level + "a:\n" for level in range(1, MAX_YAML_DEPTH - 1))
    assert parse_yaml(text)


# --------------------------------------------------------------------------- agents


def test_n_agents_bound_is_the_public_constant(tmp_path: Path) -> None:
    assert MAX_AGENTS == 100_000_000
    python = message_of(lambda: RunConfig(population=POPULATION, n_agents=MAX_AGENTS + 1))
    assert python.startswith("RunConfig: n_agents: must be at most 100000000")
    path = write_run(tmp_path, n_agents=MAX_AGENTS + 1)
    assert message_of(lambda: load_run_config(path)).startswith(f"{path}: n_agents: ")


# --------------------------------------------------------------------------- failed answers


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (1.5, "must be at most 1, got 1.5"),
        (-0.1, "must be at least 0, got -0.1"),
        ("half", "expected a number or a fraction like 2/3, got 'half'"),
    ],
)
def test_max_failed_share_outside_0_to_1(value: Any, says: str, tmp_path: Path) -> None:
    python = message_of(lambda: RunConfig(population=POPULATION, max_failed_share=value))
    assert python == f"RunConfig: max_failed_share: {says}"
    path = write_run(tmp_path, max_failed_share=value)
    assert message_of(lambda: load_run_config(path)) == f"{path}: max_failed_share: {says}"


def test_max_failed_share_defaults_to_a_half_and_takes_fractions() -> None:
    assert RunConfig(population=POPULATION).max_failed_share == 0.5
    assert RunConfig(population=POPULATION, max_failed_share="1/4").max_failed_share == 0.25
    for edge in (0, 1):
        assert RunConfig(population=POPULATION, max_failed_share=edge).max_failed_share == edge


# --------------------------------------------------------------------------- model.sampling


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ({"kind": "replay", "bundle": "b", "sampling": "workbench"}, "kind replay answers what"),
        ({"sampling": "workbench", "constrained": False}, "with constrained false"),
    ],
)
def test_distribution_mode_where_it_cannot_apply(
    model: dict[str, Any], says: str, tmp_path: Path
) -> None:
    path = write_run(tmp_path, policy={"kind": "llm"}, model=model)
    message = message_of(lambda: load_run_config(path))
    assert message.startswith(f"{path}: model: ") and "sampling workbench" in message
    assert says in message and "set sampling to auto or server" in message


def test_distribution_mode_auto_applies_where_it_can() -> None:
    for model in ({"kind": "vllm", "name": "m"}, {"constrained": False}):
        run = RunConfig(population=POPULATION, policy={"kind": "llm"}, model=model)
        assert run.model.sampling == "auto"
