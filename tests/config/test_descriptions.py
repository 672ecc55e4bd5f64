"""Every spec field is documented: the dashboard renders its forms from these descriptions.

As Panel's test suite checks that every parameter has a doc, this walks every spec model a
RunConfig can reach (and the named roots) and asserts each field has a real description.
"""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import BaseModel

from workbench.config import (
    POLICY_SPECS,
    BackendSpec,
    DimensionSpec,
    GameSpec,
    ModelSpec,
    OutputSpec,
    PopulationSpec,
    PromptSpec,
    RunConfig,
)

ROOTS: tuple[type[BaseModel], ...] = (
    RunConfig,
    PopulationSpec,
    DimensionSpec,
    *POLICY_SPECS,
    ModelSpec,
    BackendSpec,
    OutputSpec,
    PromptSpec,
    GameSpec,
)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation names, through unions, Annotated, lists and dicts."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def spec_models() -> list[type[BaseModel]]:
    """Every model reachable from ROOTS through field annotations, each once."""
    seen: dict[type[BaseModel], None] = {}
    todo = list(ROOTS)
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen[model] = None
        for field in model.model_fields.values():
            todo.extend(_models_in(field.annotation))
    return list(seen)


def test_the_walk_reaches_every_spec() -> None:
    names = {model.__name__ for model in spec_models()}
    assert {
        "RunConfig",
        "PopulationSpec",
        "DimensionSpec",
        "LLMPolicySpec",
        "RandomPolicySpec",
        "LevelKPolicySpec",
        "ModelSpec",
        "BackendSpec",
        "OutputSpec",
        "PromptSpec",
        "GameSpec",
    } <= names


@pytest.mark.parametrize("model", spec_models(), ids=lambda m: m.__name__)
def test_every_field_has_a_description(model: type[BaseModel]) -> None:
    undocumented = [
        name
        for name, field in model.model_fields.items()
        if not (field.description and len(field.description.split()) >= 3)
    ]
    assert not undocumented, f"{model.__name__}: fields without a description: {undocumented}"


@pytest.mark.parametrize("model", spec_models(), ids=lambda m: m.__name__)
def test_every_spec_has_a_docstring(model: type[BaseModel]) -> None:
    assert model.__doc__ and model.__doc__.strip()


@pytest.mark.parametrize("model", ROOTS, ids=lambda m: m.__name__)
def test_json_schema_carries_the_descriptions(model: type[BaseModel]) -> None:
    """The dashboard builds forms from the JSON schema: every property has its description."""
    properties = model.model_json_schema()["properties"]
    assert all(prop.get("description") for prop in properties.values())


def dotted_fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str | None]]:
    """(dotted key, description) for every key under `model` as a config spells it, recursively
    through nested specs, lists and mappings of specs and the policy's tagged union: the keys
    the docs' config reference (docs/_ext/workbench_docs/config_reference.py) lists."""
    out = []
    for name, field in model.model_fields.items():
        key = prefix + name
        out.append((key, field.description))
        for sub in _models_in(field.annotation):
            out.extend(dotted_fields(sub, f"{key}."))
    return out


def test_the_dotted_walk_reaches_every_kind_of_nesting() -> None:
    keys = {key for key, _ in dotted_fields(RunConfig)}
    for key in (
        "game.prompt.style",
        "population.dimensions.shares",
        "models.base_urls",
        "policy.latency_s",
        "policy.depth_shares",
        "backend.agents_per_shard",
    ):
        assert key in keys


def test_every_config_key_has_a_description() -> None:
    """Named by its dotted key, as the config reference and `--set` spell it."""
    missing = [key for key, text in dotted_fields(RunConfig) if not (text or "").strip()]
    assert missing == [], f"config keys without a description: {', '.join(missing)}"
