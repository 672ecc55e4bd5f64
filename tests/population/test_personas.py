"""Persona text (template or generic sentence, one format per combination) and population notes."""

import pandas as pd
import pytest

from workbench.config import PopulationSpec, validate
from workbench.errors import ConfigError
from workbench.population import (
    generic_persona,
    persona_texts,
    population_note,
    sample_population,
)


def make_spec(template: str | None = None, **extra: object) -> PopulationSpec:
    data = {
        "dimensions": [
            {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
            {"name": "education", "shares": {"high school": 0.4, "master's degree": 0.6}},
        ],
        "persona_template": template,
        **extra,
    }
    return validate(PopulationSpec, data, "test")


def test_template_is_filled_per_row() -> None:
    spec = make_spec("You are a {gender} player with a {education}.")
    frame = sample_population(spec, 1000, seed=0, with_text=False)
    texts = persona_texts(spec, frame)
    assert isinstance(texts.dtype, pd.CategoricalDtype)
    assert texts.name == "persona"
    assert len(texts.cat.categories) == 4  # one text per combination, not per agent
    for i in (0, 1, 500, 999):
        row = frame.iloc[i]
        assert texts.iloc[i] == f"You are a {row['gender']} player with a {row['education']}."


def test_generic_sentence_without_template() -> None:
    spec = make_spec()
    attributes = pd.DataFrame(
        {"gender": ["female", "male"], "education": ["master's degree", "high school"]}
    )
    texts = persona_texts(spec, attributes)
    assert texts.tolist() == [
        "You are a person whose gender is female and whose education is master's degree.",
        "You are a person whose gender is male and whose education is high school.",
    ]
    assert generic_persona({"age_band": "30-39"}) == "You are a person whose age band is 30-39."
    three = generic_persona({"a": "1", "b": "2", "c": "3"})
    assert three == "You are a person whose a is 1, whose b is 2 and whose c is 3."


def test_texts_keep_the_index_of_plain_string_columns() -> None:
    spec = make_spec("{gender}/{education}")
    attributes = pd.DataFrame(
        {"gender": ["male", "female", "male"], "education": ["high school"] * 3},
        index=[10, 20, 30],
    )
    texts = persona_texts(spec, attributes)
    assert texts.index.tolist() == [10, 20, 30]
    assert texts.tolist() == ["male/high school", "female/high school", "male/high school"]


def test_template_that_skips_a_dimension_gives_one_text_per_used_value() -> None:
    spec = make_spec("You studied up to {education}.")
    frame = sample_population(spec, 200, seed=1, with_text=False)
    texts = persona_texts(spec, frame)
    assert sorted(texts.cat.categories) == [
        "You studied up to high school.",
        "You studied up to master's degree.",
    ]


def test_missing_columns_and_values_are_rejected() -> None:
    spec = make_spec("{gender} {education}")
    with pytest.raises(ConfigError, match=r"no column for dimensions \['education'\]"):
        persona_texts(spec, pd.DataFrame({"gender": ["male"]}))
    attributes = pd.DataFrame({"gender": ["male", None], "education": ["high school"] * 2})
    with pytest.raises(ConfigError, match="'gender' has missing values"):
        persona_texts(spec, attributes)


def test_unfillable_template_is_a_config_error() -> None:
    spec = make_spec("{gender} {education} {gender.nope}")
    frame = sample_population(spec, 5, seed=0, with_text=False)
    with pytest.raises(ConfigError, match="persona_template .* cannot be filled"):
        persona_texts(spec, frame)


def test_population_note_lists_marginal_shares() -> None:
    note = population_note(make_spec())
    assert note == (
        "The players are a mix: by gender, 50% male and 50% female; "
        "by education, 40% high school and 60% master's degree."
    )
    conditional = validate(
        PopulationSpec,
        {
            "dimensions": [
                {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
                {
                    "name": "job_type",
                    "given": "gender",
                    "shares": {"male": {"a": 1.0}, "female": {"a": 0.5, "b": 0.5}},
                },
            ]
        },
        "test",
    )
    assert population_note(conditional).endswith("by job type, 75% a and 25% b.")
