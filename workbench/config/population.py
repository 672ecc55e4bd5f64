"""Population specs: demographic dimensions with (conditional) shares and a persona template.

A `PopulationSpec` is sampled into one persona per agent by `workbench.population`; here it is
only checked: shares sum to 1, conditional tables cover their parent's categories, and the
persona template names known dimensions with bounded format widths.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from workbench.config.base import (
    IDENTIFIER_PATTERN,
    MAX_FORMAT_WIDTH,
    SHARE_TOLERANCE,
    StrictModel,
    category_key,
    share_table,
    template_fields,
)
from workbench.config.html import MAX_PER_DIMENSION, MAX_ROWS, more, text, title
from workbench.config.html import share as percent
from workbench.config.html import table as html_table
from workbench.errors import ConfigError

RESERVED_COLUMNS = ("agent_id", "persona", "model")
"""Persona-table columns the workbench fills itself; no dimension may take these names."""


class DimensionSpec(StrictModel):
    """One demographic dimension: categories and their shares, optionally given another dimension.

    Unconditional: ``shares: {male: 0.5, female: 0.5}``.
    Conditional (``given: education``): ``shares: {bachelor: {engineer: 0.6, teacher: 0.4}, ...}``
    with one share table per category of the parent dimension.
    """

    name: str = Field(
        min_length=1,
        pattern=IDENTIFIER_PATTERN,
        description="the dimension's name, an identifier (letters, digits, _); it becomes a "
        "persona column and a {placeholder} of the persona template",
    )
    given: str | None = Field(
        None,
        description="name of an earlier dimension this one depends on; shares then hold one "
        "table per category of that dimension; none: unconditional",
    )
    shares: dict[str, float] | dict[str, dict[str, float]] = Field(
        description="category: share (each in [0, 1], summing to 1; fractions like 1/6 are "
        "accepted), or with given: parent category: {category: share}",
    )

    @field_validator("shares", mode="before")
    @classmethod
    def _normalise_shares(cls, value: Any, info: ValidationInfo) -> Any:
        """Text keys, float shares (fractions like "1/6" allowed), one message for a bad value."""
        name = info.data.get("name")
        where = f"dimension {name!r}" if name else "dimension"
        if not isinstance(value, dict):
            raise ValueError(
                f"{where}: shares must be a mapping of category: share (or, with 'given', "
                f"parent category: {{category: share}}), got {value!r}"
            )
        nested = [isinstance(v, dict) for v in value.values()]
        if any(nested) and not all(nested):
            raise ValueError(
                f"{where}: shares mix numbers and nested tables; use category: share, or "
                "(with 'given') parent category: {category: share}"
            )
        if not any(nested):
            return share_table(value, where)
        given = info.data.get("given")
        tables: dict[str, dict[str, float]] = {}
        for parent, table in value.items():
            key = category_key(parent, where)
            if key in tables:
                raise ValueError(f"{where}: parent category {key!r} is listed twice")
            tables[key] = share_table(table, f"{where} given {given or 'parent'}={key!r}")
        return tables

    @model_validator(mode="after")
    def _check_shares(self) -> DimensionSpec:
        if not self.shares:
            raise ValueError(f"dimension {self.name!r}: shares must list at least one category")
        tables: dict[str, dict[str, float]]
        nested = all(isinstance(v, dict) for v in self.shares.values())
        if self.given is None:
            if nested:
                raise ValueError(
                    f"dimension {self.name!r}: nested shares need 'given: <parent dimension>'"
                )
            tables = {"": self.shares}  # type: ignore[dict-item]
        else:
            if not nested:
                raise ValueError(
                    f"dimension {self.name!r} is given {self.given!r}: shares must map each "
                    f"{self.given} category to a table of shares"
                )
            tables = self.shares  # type: ignore[assignment]
        for parent, table in tables.items():
            where = f"dimension {self.name!r}" + (
                f" given {self.given}={parent!r}" if parent else ""
            )
            if not table:
                raise ValueError(f"{where}: shares must list at least one category")
            for category, share in table.items():
                if not category.strip():
                    raise ValueError(f"{where}: category names must not be empty")
                if not (0 <= share <= 1) or math.isnan(share):
                    raise ValueError(
                        f"{where}: share of {category!r} must be in [0, 1], got {share}"
                    )
            total = sum(table.values())
            if abs(total - 1) > SHARE_TOLERANCE:
                raise ValueError(
                    f"{where}: shares must sum to 1, got {total:.6g}; fix the shares "
                    f"(e.g. {len(table)} equal shares of {1 / len(table):.6g})"
                )
        return self

    def categories(self) -> list[str]:
        """All categories this dimension can take, in first-seen order."""
        if self.given is None:
            return list(self.shares)
        seen: dict[str, None] = {}
        for table in self.shares.values():
            seen.update(dict.fromkeys(table))  # type: ignore[union-attr]
        return list(seen)


class PopulationSpec(StrictModel):
    """A population described by demographic dimensions, sampled into one persona per agent."""

    name: str = Field(
        "population",
        min_length=1,
        description="a short name for the population, recorded with every run that uses it",
    )
    description: str = Field("", description="free text on where the shares come from")
    dimensions: list[DimensionSpec] = Field(
        min_length=1,
        description="the demographic dimensions, at least one; a conditional dimension comes "
        "after the dimension it is given",
    )
    sampling: Literal["quota", "iid"] = Field(
        "quota",
        description="quota: exact counts per category (largest remainder); iid: independent "
        "random draws per agent",
    )
    persona_template: str | None = Field(
        None,
        description="persona text with {dimension} placeholders (format widths at most "
        f"{MAX_FORMAT_WIDTH}); none: a generic sentence naming each dimension and value",
    )

    @model_validator(mode="after")
    def _check_dimensions(self) -> PopulationSpec:
        seen: dict[str, DimensionSpec] = {}
        for dim in self.dimensions:
            if dim.name in seen:
                raise ValueError(f"dimension {dim.name!r} is listed twice")
            if dim.name in RESERVED_COLUMNS:
                raise ValueError(f"dimension name {dim.name!r} is reserved; choose another name")
            if dim.given is not None:
                if dim.given not in seen:
                    raise ValueError(
                        f"dimension {dim.name!r} is given {dim.given!r}, which is not an earlier "
                        f"dimension; known: {sorted(seen)}"
                    )
                missing = set(seen[dim.given].categories()) - set(dim.shares)
                extra = set(dim.shares) - set(seen[dim.given].categories())
                if missing or extra:
                    found = [f"missing {sorted(missing)}"] if missing else []
                    found += [f"unknown {sorted(extra)}"] if extra else []
                    raise ValueError(
                        f"dimension {dim.name!r} must give one share table per {dim.given} "
                        f"category: {', '.join(found)}"
                    )
            seen[dim.name] = dim
        if self.persona_template is not None:
            try:
                fields = template_fields(self.persona_template)
            except ValueError as exc:
                raise ValueError(f"persona_template: {exc}") from None
            unknown = [f for f in fields if f not in seen]
            if unknown:
                raise ValueError(
                    f"persona_template uses unknown dimensions {unknown}; known: {sorted(seen)}"
                )
        return self

    def _repr_html_(self) -> str:
        """A small table for notebooks: dimensions, categories, shares, conditioning."""
        return population_html(self)

    def dimension(self, name: str) -> DimensionSpec:
        """The dimension called `name`; ConfigError naming the known ones otherwise."""
        for dim in self.dimensions:
            if dim.name == name:
                return dim
        raise ConfigError(f"unknown dimension {name!r}; known: {[d.name for d in self.dimensions]}")


def share_rows(spec: PopulationSpec) -> tuple[list[tuple[str, str, str, str]], int]:
    """(dimension, condition, category, share) rows within the budgets, and how many were cut."""
    rows: list[tuple[str, str, str, str]] = []
    cut = 0
    for dim in spec.dimensions:
        if dim.given is None:
            entries = [("", c, s) for c, s in dim.shares.items()]  # type: ignore[misc]
        else:
            entries = [
                (f"{dim.given}={parent}", c, s)
                for parent, table_ in dim.shares.items()
                for c, s in table_.items()  # type: ignore[union-attr]
            ]
        room = max(0, min(MAX_PER_DIMENSION, MAX_ROWS - len(rows)))
        for i, (given, category, value) in enumerate(entries[:room]):
            rows.append((dim.name if i == 0 else "", given, category, percent(value)))
        cut += len(entries) - min(room, len(entries))
    return rows, cut


def population_html(spec: PopulationSpec) -> str:
    """A population spec: name, sampling, its dimensions' categories and shares (with the
    conditioning), the persona template; bounded by MAX_ROWS and MAX_PER_DIMENSION."""
    dims = spec.dimensions
    detail = f"{len(dims)} dimension{'s' if len(dims) != 1 else ''}, sampling {spec.sampling}"
    rows, cut = share_rows(spec)
    parts = [title("PopulationSpec", spec.name, detail)]
    if spec.description:
        parts.append(f"<div>{text(spec.description, 200)}</div>")
    parts.append(html_table(("dimension", "given", "category", "share"), rows, more(cut, "shares")))
    if spec.persona_template is not None:
        parts.append(
            f"<div>persona template: <code>{text(spec.persona_template, 200)}</code></div>"
        )
    return "<div>" + "".join(parts) + "</div>"


def population_summary(spec: PopulationSpec | str) -> str:
    """One line: the spec's name and dimensions with their category counts (or its path)."""
    if isinstance(spec, str):
        return f"file {spec}"
    dims = ", ".join(f"{d.name} ({len(d.categories())})" for d in spec.dimensions[:8])
    extra = f", +{len(spec.dimensions) - 8} more" if len(spec.dimensions) > 8 else ""
    return f"{spec.name}: {dims}{extra}"
