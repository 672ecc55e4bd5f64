"""Run configs and population specs: ranges, unknown keys, YAML problems and clear error messages.

Every rejected config raises ConfigError with one message naming the file, the field path,
what is allowed and what came.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from workbench.config import (
    GameSpec,
    LevelKPolicySpec,
    PopulationSpec,
    RandomPolicySpec,
    RunConfig,
    load_population_spec,
    load_run_config,
    parse_yaml,
    resolve_population,
    save_yaml,
    template_fields,
    to_yaml,
    validate,
)
from workbench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "personas"
QUICKSTART = ROOT / "workbench" / "examples" / "quickstart.yaml"

POPULATION: dict[str, Any] = {
    "name": "tiny",
    "dimensions": [
        {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
        {"name": "education", "shares": {"school": 0.4, "degree": 0.6}},
    ],
}


def run_data(**changes: Any) -> dict[str, Any]:
    """A valid run config as plain data, with top-level keys replaced by `changes`."""
    data: dict[str, Any] = {
        "name": "t",
        "n_agents": 10,
        "population": copy.deepcopy(POPULATION),
        "policy": {"kind": "random"},
    }
    data.update(changes)
    return data


def config_error(model: type, data: Any) -> str:
    """The message of the ConfigError that validating `data` raises."""
    with pytest.raises(ConfigError) as info:
        validate(model, data, "cfg.yaml")
    message = str(info.value)
    assert message.startswith("cfg.yaml: ")
    assert "\n" not in message
    return message


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- game


@pytest.mark.parametrize("ratio", [0, 1.5, -1, "abc", "0", "1/0", float("nan")])
def test_ratio_outside_zero_one_is_rejected(ratio: Any) -> None:
    message = config_error(RunConfig, run_data(game={"ratio": ratio}))
    assert "game.ratio: " in message
    assert "(0, 1]" in message or "a fraction like 2/3" in message
    assert "got" in message


@pytest.mark.parametrize(
    ("ratio", "expected"), [("2/3", 2 / 3), ("1 / 2", 0.5), (1, 1.0), ("0.25", 0.25)]
)
def test_ratio_accepts_numbers_and_fractions(ratio: Any, expected: float) -> None:
    config = validate(RunConfig, run_data(game={"ratio": ratio}), "cfg.yaml")
    assert config.game.ratio == pytest.approx(expected, abs=1e-15)


def test_fraction_in_yaml_file(tmp_path: Path) -> None:
    path = write(tmp_path / "g.yaml", "ratio: 2/3\nlow: 0\nhigh: 100\n")
    game = validate(GameSpec, parse_yaml(path.read_text()), str(path))
    assert game.ratio == pytest.approx(0.6666666666666666)


@pytest.mark.parametrize(("low", "high"), [(5, 5), (10, 0), ("1/2", "1/3")])
def test_low_not_below_high_is_rejected(low: Any, high: Any) -> None:
    message = config_error(RunConfig, run_data(game={"low": low, "high": high}))
    assert "game: low must be < high" in message
    assert "got low=" in message


@pytest.mark.parametrize("field", ["low", "high", "offset"])
def test_game_numbers_must_be_finite(field: str) -> None:
    data = parse_yaml(f"{field}: .inf\n")
    message = config_error(RunConfig, run_data(game=data))
    assert f"game.{field}: must be a finite number, got inf" in message


def test_rounds_zero_is_rejected() -> None:
    message = config_error(RunConfig, run_data(game={"rounds": 0}))
    assert "cfg.yaml: game.rounds: must be at least 1, got 0" == message


# --------------------------------------------------------------------------- top level


def test_negative_n_agents_names_field_limit_and_value() -> None:
    message = config_error(RunConfig, run_data(n_agents=-5))
    assert message == "cfg.yaml: n_agents: must be at least 1, got -5"


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"foo": 1}, "cfg.yaml: foo: unknown key"),
        ({"game": {"foo": 1}}, "cfg.yaml: game.foo: unknown key"),
        ({"game": {"prompt": {"stlye": "direct"}}}, "cfg.yaml: game.prompt.stlye: unknown key"),
        ({"policy": {"kind": "random", "latncy_s": 1}}, "cfg.yaml: policy.latncy_s: unknown key"),
        ({"model": {"temprature": 0.1}}, "cfg.yaml: model.temprature: unknown key"),
    ],
)
def test_unknown_keys_are_rejected_at_every_level(changes: dict, where: str) -> None:
    message = config_error(RunConfig, run_data(**changes))
    assert message.startswith(where)
    assert "remove it or check its spelling" in message


def test_unknown_key_in_inline_population() -> None:
    population = copy.deepcopy(POPULATION)
    population["dimensions"][0]["weights"] = {}
    message = config_error(RunConfig, run_data(population=population))
    assert message == (
        "cfg.yaml: population.dimensions.0.weights: unknown key; remove it or check its spelling"
    )


def test_missing_population_is_named() -> None:
    data = run_data()
    del data["population"]
    message = config_error(RunConfig, data)
    assert message == "cfg.yaml: population: required field is missing; add it"


def test_population_of_wrong_type_gives_one_message() -> None:
    message = config_error(RunConfig, run_data(population=5))
    assert message == (
        "cfg.yaml: population: expected a population spec (a mapping with 'dimensions') or the "
        "path of a population YAML file, got 5"
    )


def test_bad_inline_population_reports_only_the_spec_problem() -> None:
    population = copy.deepcopy(POPULATION)
    population["dimensions"][1]["shares"] = {"school": 0.4, "degree": 0.4}
    message = config_error(RunConfig, run_data(population=population))
    assert message.count("cfg.yaml:") == 1
    assert "population.dimensions.1: dimension 'education': shares must sum to 1" in message
    assert "valid string" not in message and "spec" not in message.split(":")[1]


def test_policy_errors_do_not_show_union_tags() -> None:
    message = config_error(RunConfig, run_data(policy={"kind": "random", "latency_s": -1}))
    assert message == "cfg.yaml: policy.latency_s: must be at least 0, got -1"
    message = config_error(RunConfig, run_data(policy={"kind": "dummy"}))
    assert message.startswith("cfg.yaml: policy: ")
    assert "'llm', 'random', 'level_k'" in message


# --------------------------------------------------------------------------- population specs


def dims(*dimensions: dict) -> dict[str, Any]:
    return {"name": "p", "dimensions": list(dimensions)}


def test_shares_not_summing_to_one_name_the_dimension() -> None:
    message = config_error(
        PopulationSpec, dims({"name": "age", "shares": {"young": 0.5, "old": 0.6}})
    )
    assert "dimensions.0: dimension 'age': shares must sum to 1, got 1.1" in message


def test_conditional_dimension_missing_a_parent_category() -> None:
    spec = dims(
        {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
        {"name": "job", "given": "gender", "shares": {"male": {"a": 1.0}}},
    )
    message = config_error(PopulationSpec, spec)
    assert "dimension 'job' must give one share table per gender category" in message
    assert "missing ['female']" in message
    assert "unknown" not in message


def test_conditional_dimension_with_an_unknown_parent_category() -> None:
    spec = dims(
        {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
        {"name": "job", "given": "gender", "shares": {"male": {"a": 1}, "female": {"a": 1}}},
        {"name": "city", "given": "job", "shares": {"a": {"x": 1}, "b": {"x": 1}}},
    )
    message = config_error(PopulationSpec, spec)
    assert "dimension 'city'" in message and "unknown ['b']" in message


@pytest.mark.parametrize(
    "shares",
    [
        "oops",
        ["male", "female"],
        {"male": "lots", "female": 0.5},
        {"male": None, "female": 0.5},
        {"male": True, "female": 0.5},
        {"male": "1/0", "female": 0.5},
        {"male": 0.5, "female": {"x": 0.5}},
    ],
)
def test_wrong_shares_value_gives_one_clear_message(shares: Any) -> None:
    message = config_error(PopulationSpec, dims({"name": "gender", "shares": shares}))
    assert message.count("cfg.yaml:") == 1, message
    assert message.startswith("cfg.yaml: dimensions.0.shares: dimension 'gender': ")
    assert "dict[" not in message  # no pydantic union branch names
    assert "got" in message or "mix numbers and nested tables" in message


def test_wrong_nested_share_names_the_parent_category() -> None:
    spec = dims(
        {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
        {"name": "job", "given": "gender", "shares": {"male": {"a": 1}, "female": {"a": "x"}}},
    )
    message = config_error(PopulationSpec, spec)
    assert message == (
        "cfg.yaml: dimensions.1.shares: dimension 'job' given gender='female': share of 'a' "
        "must be a number or a fraction like 1/6, got 'x'"
    )


def test_shares_accept_fractions_as_text_also_nested() -> None:
    spec = validate(
        PopulationSpec,
        dims(
            {"name": "third", "shares": {"a": "1/3", "b": "1/3", "c": "1/3"}},
            {
                "name": "job",
                "given": "third",
                "shares": {
                    "a": {"x": "1/6", "y": "5/6"},
                    "b": {"x": 1},
                    "c": {"x": "1/2", "y": 0.5},
                },
            },
        ),
        "cfg.yaml",
    )
    assert spec.dimensions[0].shares == {"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}
    assert spec.dimensions[1].shares["a"] == {"x": 1 / 6, "y": 5 / 6}
    assert spec.dimensions[1].categories() == ["x", "y"]


def test_fraction_shares_still_must_sum_to_one() -> None:
    message = config_error(PopulationSpec, dims({"name": "g", "shares": {"a": "1/3", "b": "1/3"}}))
    assert "dimension 'g': shares must sum to 1, got 0.666667" in message


def test_yaml_number_and_boolean_keys_become_text(tmp_path: Path) -> None:
    text = """
name: ages
dimensions:
  - name: age
    shares: {18: 0.5, 65: 0.5}
  - name: smoker
    given: age
    shares:
      18: {yes: 1/4, no: 3/4}
      65: {yes: 0.1, no: 0.9}
"""
    spec = load_population_spec(write(tmp_path / "ages.yaml", text))
    assert spec.dimensions[0].categories() == ["18", "65"]
    assert spec.dimensions[1].shares == {
        "18": {"yes": 0.25, "no": 0.75},
        "65": {"yes": 0.1, "no": 0.9},
    }
    # Data built in Python (or by plain yaml.safe_load) gets str() keys.
    spec = validate(PopulationSpec, dims({"name": "age", "shares": {18: 0.5, 65: 0.5}}), "x")
    assert spec.dimensions[0].categories() == ["18", "65"]


def test_keys_equal_as_text_are_a_duplicate() -> None:
    message = config_error(PopulationSpec, dims({"name": "age", "shares": {18: 0.5, "18": 0.5}}))
    assert "dimension 'age': category '18' is listed twice" in message


def test_template_field_names_are_checked_before_dot_or_bracket() -> None:
    base = dims({"name": "gender", "shares": {"male": 0.5, "female": 0.5}})
    ok = validate(
        PopulationSpec,
        base | {"persona_template": "A {gender.title} {gender[0]} {gender!r:>8} {{literal}}"},
        "cfg.yaml",
    )
    assert ok.persona_template is not None
    message = config_error(PopulationSpec, base | {"persona_template": "A {job.title}"})
    assert "persona_template uses unknown dimensions ['job']; known: ['gender']" in message
    assert template_fields("{a} {b.c} {a[1]} {{d}}") == ["a", "b"]


@pytest.mark.parametrize("template", ["You are {}.", "You are {0}.", "{gender} and {1.x}"])
def test_positional_placeholders_are_rejected(template: str) -> None:
    base = dims({"name": "gender", "shares": {"male": 0.5, "female": 0.5}})
    message = config_error(PopulationSpec, base | {"persona_template": template})
    assert "cfg.yaml: persona_template: positional placeholder {" in message
    assert "name a dimension, e.g. {gender}" in message


def test_malformed_template_is_rejected() -> None:
    base = dims({"name": "gender", "shares": {"male": 0.5, "female": 0.5}})
    message = config_error(PopulationSpec, base | {"persona_template": "You are {gender"})
    assert "persona_template: not a valid template" in message


# --------------------------------------------------------------------------- level-k


def test_level_k_depth_shares_must_sum_to_one() -> None:
    policy = {"kind": "level_k", "depth_shares": {0: 0.5, 1: 0.6}}
    message = config_error(RunConfig, run_data(policy=policy))
    assert "policy: depth_shares: shares must be >= 0 and sum to 1" in message


def test_level_k_by_attribute_shares_must_sum_to_one() -> None:
    policy = {"kind": "level_k", "attribute": "gender", "by_attribute": {"male": {0: 0.3}}}
    message = config_error(RunConfig, run_data(policy=policy))
    assert "policy: by_attribute.male: shares must be >= 0 and sum to 1" in message


def test_level_k_accepts_fractions_and_text_keys(tmp_path: Path) -> None:
    text = "kind: level_k\ndepth_shares: {0: 1/3, 1: 2/3}\nattribute: age\nby_attribute:\n"
    text += "  18: {0: 1/2, 2: 1/2}\n"
    policy = validate(LevelKPolicySpec, parse_yaml(text), "policy")
    assert policy.depth_shares == {0: 1 / 3, 1: 2 / 3}
    assert policy.by_attribute == {"18": {0: 0.5, 2: 0.5}}


def test_level_k_by_attribute_needs_attribute() -> None:
    policy = {"kind": "level_k", "by_attribute": {"male": {0: 1}}}
    message = config_error(RunConfig, run_data(policy=policy))
    assert "by_attribute needs 'attribute: <persona column>'" in message


# --------------------------------------------------------------------------- files


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: file not found; check the path"):
        load_run_config(tmp_path / "nope.yaml")


def test_missing_population_file(tmp_path: Path) -> None:
    path = write(tmp_path / "run.yaml", "n_agents: 5\npopulation: no-such-population.yaml\n")
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: population: file 'no-such-population.yaml' not found")
    assert str(tmp_path) in message


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.yaml", "name: x\nn_agents: 5\ngame: {ratio: 2/3\n")
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not valid YAML at line ")
    line = int(message.split("at line ")[1].split(":")[0])
    assert line in (3, 4)


def test_duplicate_yaml_key_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "dup.yaml", "n_agents: 5\ngame: {rounds: 2}\ngame: {rounds: 3}\n")
    with pytest.raises(ConfigError, match=r"at line 3: found duplicate key 'game'"):
        load_run_config(path)


def test_yaml_merge_keys_may_override() -> None:
    data = parse_yaml("base: &b {rounds: 2, ratio: 1/2}\ngame: {<<: *b, rounds: 3}\n")
    assert data["game"] == {"rounds": 3, "ratio": "1/2"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- a\n- b\n", "expected a mapping of keys (key: value lines), got a list"),
        ("just text\n", "expected a mapping of keys (key: value lines), got a str"),
        ("", "empty; expected a mapping of keys (key: value lines)"),
        ("# only a comment\n", "empty; expected a mapping of keys (key: value lines)"),
    ],
)
def test_yaml_that_is_not_a_mapping(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path / "list.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    assert str(info.value) == f"{path}: {expected}"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        load_run_config(path)


def test_yaml_round_trip(tmp_path: Path) -> None:
    data = run_data(
        seed=7,
        n_agents=123,
        game={"ratio": "2/3", "offset": 5, "rounds": 4, "prompt": {"style": "step_by_step"}},
        policy={
            "kind": "level_k",
            "depth_shares": {0: 0.25, 1: 0.75},
            "attribute": "gender",
            "by_attribute": {"male": {0: 1}},
        },
        backend={"agents_per_shard": 17},
    )
    config = validate(RunConfig, data, "cfg.yaml")
    path = save_yaml(config, tmp_path / "round-trip.yaml")
    assert not list(tmp_path.glob(".*"))  # the temp file was renamed
    again = load_run_config(path)
    assert again == config
    assert to_yaml(again) == to_yaml(config)
    assert again.game.ratio == 2 / 3


def test_population_round_trip_with_text_keys(tmp_path: Path) -> None:
    spec = validate(
        PopulationSpec,
        dims(
            {"name": "age", "shares": {18: "1/2", 65: "1/2"}},
            {"name": "smoker", "given": "age", "shares": {18: {"yes": 1}, 65: {"no": 1}}},
        ),
        "x",
    )
    again = load_population_spec(save_yaml(spec, tmp_path / "p.yaml"))
    assert again == spec


def test_relative_population_resolves_against_the_config_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = tmp_path / "configs"
    (configs / "pops").mkdir(parents=True)
    save_yaml(validate(PopulationSpec, POPULATION, "pop"), configs / "pops" / "tiny.yaml")
    path = write(configs / "run.yaml", "n_agents: 4\npopulation: pops/tiny.yaml\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_run_config(path)
    assert isinstance(config.population, PopulationSpec)
    assert config.population.name == "tiny"
    # Also when the config itself is named by a relative path.
    monkeypatch.chdir(tmp_path)
    assert load_run_config(Path("configs/run.yaml")).population == config.population


def test_population_given_as_path_object() -> None:
    config = validate(RunConfig, run_data(population=PERSONAS / "paper-education.yaml"), "x")
    assert config.population == str(PERSONAS / "paper-education.yaml")
    resolved = resolve_population(config)
    assert isinstance(resolved.population, PopulationSpec)
    assert resolved.population.name == "paper-education"


def test_bad_population_file_names_that_file(tmp_path: Path) -> None:
    write(tmp_path / "pop.yaml", "name: p\ndimensions:\n  - name: g\n    shares: {a: 0.3}\n")
    path = write(tmp_path / "run.yaml", "population: pop.yaml\n")
    with pytest.raises(ConfigError) as info:
        load_run_config(path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'pop.yaml'}: dimensions.0: dimension 'g'")


# --------------------------------------------------------------------------- shipped files


def test_quickstart_example_loads() -> None:
    config = load_run_config(QUICKSTART)
    assert config.name == "quickstart"
    assert config.game.ratio == pytest.approx(2 / 3)
    assert config.game.rounds == 3
    assert config.policy.kind == "llm"
    assert isinstance(config.population, PopulationSpec)
    assert config.population.name == "paper-education"


@pytest.mark.parametrize("path", sorted(PERSONAS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_population_specs_load(path: Path) -> None:
    spec = load_population_spec(path)
    assert spec.name == path.stem
    for dim in spec.dimensions:
        tables = [dim.shares] if dim.given is None else list(dim.shares.values())
        for table in tables:
            assert sum(table.values()) == pytest.approx(1, abs=1e-12)  # type: ignore[union-attr]


def test_paper_profession_uses_exact_sixths() -> None:
    text = (PERSONAS / "paper-profession.yaml").read_text()
    assert text.count(": 1/6") == 6
    profession = load_population_spec(PERSONAS / "paper-profession.yaml").dimension("profession")
    assert list(profession.shares.values()) == [1 / 6] * 6


def test_shipped_yaml_reads_the_same_with_plain_safe_load() -> None:
    """The shipped files do not rely on the config loader's key handling."""
    for path in [QUICKSTART, *PERSONAS.glob("*.yaml")]:
        text = path.read_text()
        assert parse_yaml(text) == yaml.safe_load(text)


def test_random_policy_defaults() -> None:
    policy = RandomPolicySpec()
    assert policy.latency_s == 0 and policy.integer


@pytest.mark.parametrize(
    ("written", "mode"),
    [("true", "fallback"), ("false", "never"), ("fallback", "fallback"), ("always", "always")],
)
def test_extract_number_modes_and_the_old_booleans(written: str, mode: str, tmp_path: Path) -> None:
    policy = {"kind": "llm", "extract_number": yaml.safe_load(written)}
    path = write(tmp_path / "run.yaml", yaml.safe_dump(run_data(policy=policy)))
    config = load_run_config(path)
    assert config.policy.extract_number == mode
    assert validate(RunConfig, parse_yaml(to_yaml(config)), "again.yaml") == config


def test_extract_number_names_its_modes() -> None:
    message = config_error(RunConfig, run_data(policy={"kind": "llm", "extract_number": "often"}))
    assert message.startswith("cfg.yaml: policy.extract_number: ")
    assert "'never', 'fallback' or 'always'" in message and "'often'" in message
