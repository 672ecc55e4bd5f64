"""The shipped paper populations load with their shares, and bad population specs are rejected."""

from pathlib import Path

import pytest

from workbench.config import PopulationSpec, load_population_spec, validate
from workbench.errors import ConfigError
from workbench.population import population_note, quota_counts, sample_population

PERSONAS = Path(__file__).resolve().parents[2] / "personas"
EDUCATION = ["elementary school", "high school", "bachelor's degree", "master's degree"]
EDUCATION += ["doctoral degree"]
PROFESSIONS = ["game theory professors", "economists", "psychologists", "athletes", "artists"]
PROFESSIONS += ["writers"]


def test_paper_education_spec() -> None:
    spec = load_population_spec(PERSONAS / "paper-education.yaml")
    assert spec.name == "paper-education"
    assert "2407.17789" in spec.description and "Pan" in spec.description
    assert spec.sampling == "quota"
    gender, education = spec.dimensions
    assert gender.name == "gender" and gender.shares == {"male": 0.5, "female": 0.5}
    assert education.name == "education" and education.categories() == EDUCATION
    assert list(education.shares.values()) == [0.2] * 5
    frame = sample_population(spec, 1000, seed=0)
    assert frame["education"].value_counts().tolist() == [200] * 5
    row = frame.iloc[0]
    assert row["persona"] == spec.persona_template.format(
        gender=row["gender"], education=row["education"]
    )
    assert "20% doctoral degree" in population_note(spec)


def test_paper_profession_spec_has_six_equal_shares_summing_to_one() -> None:
    spec = load_population_spec(PERSONAS / "paper-profession.yaml")
    assert spec.name == "paper-profession"
    assert "2407.17789" in spec.description
    gender, profession = spec.dimensions
    assert gender.shares == {"male": 0.5, "female": 0.5}
    assert profession.categories() == PROFESSIONS
    shares = list(profession.shares.values())
    assert abs(sum(shares) - 1) < 1e-9
    assert all(abs(s - 1 / 6) < 1e-9 for s in shares)
    for n in range(1, 3000):  # the decimals give the same quotas as exact sixths
        assert quota_counts(shares, n).tolist() == quota_counts([1 / 6] * 6, n).tolist()
    persona = sample_population(spec, 12, seed=0)["persona"]
    assert persona.str.contains("economists").sum() == 2


def test_shares_must_sum_to_one() -> None:
    data = {"dimensions": [{"name": "gender", "shares": {"male": 0.5, "female": 0.4}}]}
    with pytest.raises(ConfigError, match="dimension 'gender': shares must sum to 1"):
        validate(PopulationSpec, data, "test")


def test_conditional_table_must_sum_to_one() -> None:
    data = {
        "dimensions": [
            {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
            {
                "name": "job",
                "given": "gender",
                "shares": {"male": {"a": 1.0}, "female": {"a": 0.5, "b": 0.6}},
            },
        ]
    }
    with pytest.raises(ConfigError, match="dimension 'job' given gender='female'.*sum to 1"):
        validate(PopulationSpec, data, "test")


def test_unknown_given_dimension_is_rejected() -> None:
    data = {
        "dimensions": [
            {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
            {"name": "job", "given": "education", "shares": {"x": {"a": 1.0}}},
        ]
    }
    with pytest.raises(ConfigError, match="'job' is given 'education', which is not an earlier"):
        validate(PopulationSpec, data, "test")


def test_empty_categories_are_rejected() -> None:
    empty = {"dimensions": [{"name": "gender", "shares": {}}]}
    with pytest.raises(ConfigError, match="'gender': shares must list at least one category"):
        validate(PopulationSpec, empty, "test")
    blank = {"dimensions": [{"name": "gender", "shares": {" ": 1.0}}]}
    with pytest.raises(ConfigError, match="category names must not be empty"):
        validate(PopulationSpec, blank, "test")


def test_unknown_template_placeholder_is_rejected() -> None:
    data = {
        "dimensions": [{"name": "gender", "shares": {"male": 0.5, "female": 0.5}}],
        "persona_template": "You are a {gender} {profession}.",
    }
    with pytest.raises(
        ConfigError, match=r"persona_template uses unknown dimensions \['profession'"
    ):
        validate(PopulationSpec, data, "test")
