"""Every config key has a description: the config reference (docs), the dashboard's tooltips
and the CLI's messages are all generated from it, so a field without one is a gap everywhere."""

from __future__ import annotations

import typing
from collections.abc import Iterator

from pydantic import BaseModel

from workbench.config import PopulationSpec, RunConfig


def _models(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds: nested, in lists, dicts, unions, Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models(arg)]


def fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, str | None]]:
    """(dotted key, description) for every field under `model`, recursively."""
    for name, info in model.model_fields.items():
        key = prefix + name
        yield key, info.description
        for sub in _models(info.annotation):
            yield from fields(sub, f"{key}.")


def test_the_walk_reaches_nested_specs_lists_dicts_and_unions() -> None:
    keys = {key for key, _ in fields(RunConfig)}
    # nested spec, list of specs, dict of specs, tagged union, alias-bearing spec
    for key in ("game.prompt.style", "population.dimensions.shares", "models.base_urls",
                "policy.latency_s", "policy.depth_shares", "backend.agents_per_shard"):
        assert key in keys


def test_every_config_field_has_a_description() -> None:
    missing = [
        key
        for root in (RunConfig, PopulationSpec)
        for key, description in fields(root)
        if not (description or "").strip()
    ]
    assert missing == [], f"config fields without a description: {', '.join(missing)}"
