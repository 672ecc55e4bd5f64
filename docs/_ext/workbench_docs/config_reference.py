"""The config reference, generated from the pydantic specs under `workbench.config`.

Every key of a run config, walked from `RunConfig.model_fields` down through nested specs, lists
of specs (`population.dimensions[]`), mappings of specs (`models.<name>`) and tagged unions
(`policy`, one table per kind): its type, default, the bounds its field metadata declares
(ge, gt, le, lt, lengths, pattern) and its description. Nothing here is written by hand; a
field without a description is a warning, which fails the docs build.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import annotated_types as at
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from workbench.config import RunConfig, fraction_text

Warn = Callable[[str], None]


@dataclass
class Section:
    """One table of the page: a spec's fields under a dotted prefix."""

    prefix: str
    model: type[BaseModel]
    title: str
    rows: list[tuple[str, str, str, str, str]] = field(default_factory=list)


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds, wherever (unions, lists, dicts, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        for model in _models(arg):
            if model not in found:
                found.append(model)
    return found


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def type_text(annotation: Any) -> str:
    """An annotation as a reader says it: `float`, `str or null`, `one of a, b`, `list of str`."""
    annotation = _strip(annotation)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in args)
    if origin in (typing.Union, types.UnionType):
        parts = [type_text(arg) for arg in args if arg is not type(None)]
        text = " or ".join(parts)
        return text + " or null" if type(None) in args else text
    if origin is list:
        return f"list of {type_text(args[0])}"
    if origin is dict:
        return f"mapping of {type_text(args[0])} to {type_text(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"{annotation.__name__} (below)"
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def default_text(info: FieldInfo) -> str:
    """The field's default as YAML would write it; `required` where there is none."""
    if info.default is PydanticUndefined:
        if info.default_factory is None:
            return "required"
        if getattr(info, "default_factory_takes_data", False):
            return "computed"
        value = info.default_factory()
    else:
        value = info.default
    if isinstance(value, BaseModel):
        return "its fields' defaults"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and not value.is_integer():
        return f"`{fraction_text(value)}`"
    if value in ({}, []):
        return "empty"
    return f"`{value}`"


def bounds_text(info: FieldInfo) -> str:
    """What the field's metadata constrains: >= 0, < 10, length, pattern."""
    parts = []
    for item in info.metadata:
        if isinstance(item, at.Ge):
            parts.append(f"≥ {item.ge:g}" if isinstance(item.ge, float) else f"≥ {item.ge:,}")
        elif isinstance(item, at.Gt):
            parts.append(f"> {item.gt}")
        elif isinstance(item, at.Le):
            parts.append(f"≤ {item.le:,}")
        elif isinstance(item, at.Lt):
            parts.append(f"< {item.lt:,}")
        elif isinstance(item, at.MinLen):
            parts.append(f"length ≥ {item.min_length}")
        elif isinstance(item, at.MaxLen):
            parts.append(f"length ≤ {item.max_length}")
        elif getattr(item, "pattern", None):
            parts.append(f"matches `{item.pattern}`")
        elif getattr(item, "allow_inf_nan", None) is False:
            parts.append("finite")
    return ", ".join(parts)


def _kind_of(model: type[BaseModel]) -> str | None:
    kind = model.model_fields.get("kind")
    if kind is None or not isinstance(kind.default, str):
        return None
    return kind.default


def sections(warn: Warn, root: type[BaseModel] = RunConfig) -> list[Section]:
    """Every table of the page, parents before children, each field described or warned of."""
    out: list[Section] = []
    seen: set[tuple[str, type[BaseModel]]] = set()

    def walk(model: type[BaseModel], prefix: str, title: str) -> None:
        section = Section(prefix, model, title)
        out.append(section)
        children: list[tuple[type[BaseModel], str, str]] = []
        for name, info in model.model_fields.items():
            key = prefix + name
            if not (info.description or "").strip():
                warn(f"config field {key} ({model.__name__}.{name}) has no description")
            aliases = getattr(info.validation_alias, "choices", None) or []
            also = [alias for alias in aliases if isinstance(alias, str) and alias != name]
            description = (info.description or "").strip()
            if also:
                description += " (also read as " + ", ".join(f"`{a}`" for a in also) + ")"
            section.rows.append(
                (
                    f"`{key}`",
                    type_text(info.annotation),
                    default_text(info),
                    bounds_text(info),
                    description,
                )
            )
            nested = _models(info.annotation)
            base = _strip(info.annotation)
            origin = typing.get_origin(base)
            if origin is list:
                child_prefix = f"{key}[]."
            elif origin is dict:
                child_prefix = f"{key}.<name>."
            else:
                child_prefix = f"{key}."
            for sub in nested:
                kind = _kind_of(sub) if len(nested) > 1 else None
                sub_title = f"`{key}` ({sub.__name__}" + (f", kind `{kind}`)" if kind else ")")
                if (child_prefix, sub) not in seen:
                    seen.add((child_prefix, sub))
                    children.append((sub, child_prefix, sub_title))
        for sub, child_prefix, sub_title in children:
            walk(sub, child_prefix, sub_title)

    walk(root, "", "The run config (RunConfig)")
    return out


def _doc_line(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip()
    return " ".join(doc.split("\n\n")[0].split()) if doc else ""


def page(warn: Warn) -> str:
    """The config reference page, in MyST Markdown."""
    lines = [
        "# Config reference",
        "",
        "Every key a run config (YAML, `--set KEY=VALUE`, a sweep grid, `wb.configure`) takes,",
        "generated from the pydantic specs under `workbench.config` when the docs are built: its",
        "type, its default, the bounds the spec declares and the spec's own description. The",
        "dashboard's forms take their labels, defaults, bounds and tooltips from the same specs.",
        "Values are checked as the specs check them (some ranges, such as `game.ratio` in (0, 1],",
        "are checked by a validator and said in the description); an unknown key is refused.",
        "",
    ]
    for section in sections(warn):
        lines += [f"## {section.title}", ""]
        doc = _doc_line(section.model)
        if doc:
            lines += [doc, ""]
        for key, type_, default, bounds, description in section.rows:
            facts = [f"*{type_}*", f"default {default}"] + ([bounds] if bounds else [])
            lines += [f"{key} · " + " · ".join(facts), f": {description}", ""]
    return "\n".join(lines)
