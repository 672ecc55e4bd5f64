"""Forms generated from the pydantic specs: one field per config key, nothing declared twice.

`spec_fields(RunConfig)` walks a spec's fields (and its sub-specs') into `FormField`s: the
dotted key the field sets, a label, the spec's own description, default, bounds and choices,
and the condition under which it applies (a tagged union's variant: `policy.kind`; a model
field's `kinds` in its `json_schema_extra`: `model.kind`). `FormField.widget()` makes the Panel
widget for it and `FormField.read()` turns the widget's value back into config data, which
goes through the one override function (`config.overrides.apply_overrides`) like the CLI's
`--set`. Adding a field to a spec adds it to the form; changing a default changes the form's.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types
import panel as pn
import param
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from workbench.config import fraction_text, parse_assignments

__all__ = ["FormField", "applies", "spec_field", "spec_param", "spec_fields"]

Condition = tuple[str, tuple[str, ...]]
"""(dotted key, values): a field applies only while the config's value at key is one of them."""

JS_SAFE = 2**53
"""Bounds at or past this are left off a number input (the browser's numbers lose them)."""

LABEL_UNITS = {"_s": " (s)"}
"""Name endings shown as units in a label: latency_s -> Latency (s)."""


@dataclass(frozen=True)
class FormField:
    """One config key as a form field: what it sets, how it reads, when it applies."""

    key: str
    label: str
    description: str
    kind: Literal["bool", "choice", "int", "float", "fraction", "text", "list", "data"]
    default: Any
    optional: bool = False
    choices: tuple[Any, ...] = ()
    bounds: tuple[float | None, float | None] = (None, None)
    when: tuple[Condition, ...] = ()

    @property
    def section(self) -> str:
        """The key of the spec the field sits in (`game.prompt`); `run` for top-level keys."""
        return self.key.rsplit(".", 1)[0] if "." in self.key else "run"

    def shown(self, value: Any) -> Any:
        """A config value as the widget holds it."""
        if self.kind == "fraction" and isinstance(value, int | float):
            return fraction_text(float(value))
        if self.kind == "list":
            return ", ".join(str(v) for v in value or [])
        if self.kind == "data":
            return "" if value in (None, {}, []) else _flow(value)
        if self.kind == "text" and value is None:
            return ""
        return value

    def read(self, value: Any) -> Any:
        """A widget's value as config data (text parsed as the CLI's --set reads it)."""
        if self.kind == "list":
            return [u for u in re.split(r"[\s,]+", str(value).strip()) if u]
        if self.kind == "data":
            text = str(value).strip()
            return parse_assignments([f"{self.key}={text}"], "form")[self.key] if text else {}
        if self.kind == "text" and self.optional and not str(value).strip():
            return None
        if self.kind == "fraction":
            return str(value).strip()
        return value

    def widget(self, value: Any) -> pn.widgets.Widget:
        """The field's widget, holding `value` (config data), named for the field's key."""
        shown = self.shown(value)
        options: dict[str, Any] = {"value": shown}
        cls: type[pn.widgets.Widget] = pn.widgets.TextInput
        if self.kind == "bool":
            cls, options = pn.widgets.Checkbox, {"value": bool(shown)}
        elif self.kind == "choice":
            cls, options["options"] = pn.widgets.Select, list(self.choices)
        elif self.kind in ("int", "float"):
            cls = pn.widgets.IntInput if self.kind == "int" else pn.widgets.FloatInput
            low, high = (b if b is None or abs(b) < JS_SAFE else None for b in self.bounds)
            options |= {"start": low, "end": high}
        else:
            options["value"] = str(shown)
        if "description" in cls.param:  # a tooltip; a checkbox has none in this Panel
            options["description"] = self.description or None
        return cls(label=self.label, css_classes=[css_class(self.key)], **options)

    def placed(self, widget: pn.widgets.Widget) -> pn.viewable.Viewable:
        """`widget` as a form lays it out: a checkbox (no tooltip of its own in this Panel)
        beside an ⓘ icon carrying the description, as the other widgets carry theirs; its
        visibility follows the widget's."""
        if self.kind != "bool" or not self.description:
            return widget
        row = with_tooltip(widget, self.description, css_classes=[css_class(self.key) + "-row"])
        widget.link(row, visible="visible")
        row.visible = widget.visible
        return row


def with_tooltip(widget: pn.widgets.Widget, text: str, **params: Any) -> pn.Row:
    """`widget` beside an ⓘ icon carrying `text` (for a checkbox, which has no tooltip of its
    own in this Panel)."""
    icon = pn.widgets.TooltipIcon(value=text, margin=(4, 0, 0, 0))
    return pn.Row(widget, icon, margin=0, **params)


def css_class(key: str) -> str:
    """The CSS class of a field's widget: `wb-field-game-ratio` (for tests and styling)."""
    return "wb-field-" + key.replace(".", "-").replace("_", "-")


def _flow(value: Any) -> str:
    """Data as one line of YAML flow text (`{0: 0.2, 1: 0.8}`)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()


def _label(name: str, info: FieldInfo) -> str:
    if info.title:
        return info.title
    for ending, unit in LABEL_UNITS.items():
        if name.endswith(ending):
            name = name.removesuffix(ending) + unit
    text = name.replace("_", " ")
    return text[:1].upper() + text[1:]


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    else:
        value = None if info.default is PydanticUndefined else info.default
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    low = high = None
    for item in info.metadata:
        if isinstance(item, annotated_types.Ge | annotated_types.Gt):
            low = getattr(item, "ge", getattr(item, "gt", None))
        if isinstance(item, annotated_types.Le | annotated_types.Lt):
            high = getattr(item, "le", getattr(item, "lt", None))
    return low, high


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]), True  # noqa: UP007
    return annotation, False


def _variants(annotation: Any) -> list[type[BaseModel]]:
    """The spec classes of a tagged union (`PolicySpec`), else []."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        if all(isinstance(a, type) and issubclass(a, BaseModel) for a in args):
            return list(args)
    return []


def _kind_of(cls: type[BaseModel]) -> str:
    (value,) = typing.get_args(cls.model_fields["kind"].annotation)
    return str(value)


def spec_fields(
    spec: type[BaseModel],
    prefix: str = "",
    *,
    skip: Iterable[str] = (),
    when: tuple[Condition, ...] = (),
    section_when: Mapping[str, Condition] | None = None,
) -> list[FormField]:
    """The form fields of `spec`'s leaves, in declaration order, under dotted `prefix`; keys in
    `skip` (and below them) left out; `section_when` adds a condition to a whole section."""
    skip = tuple(skip)
    section_when = dict(section_when or {})
    fields: list[FormField] = []
    for name, info in spec.model_fields.items():
        key = f"{prefix}{name}"
        if any(key == s or key.startswith(s + ".") for s in skip):
            continue
        where = when + ((section_when[key],) if key in section_when else ())
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if "kinds" in extra and prefix:
            where += ((f"{prefix}kind", tuple(extra["kinds"])),)  # type: ignore[arg-type]
        annotation, optional = _strip_optional(info.annotation)
        variants = _variants(info.annotation)
        if variants:
            fields.append(_union_kind(key, info, variants, where))
            for variant in variants:
                inner = (*where, (f"{key}.kind", (_kind_of(variant),)))
                fields += [
                    f
                    for f in spec_fields(variant, f"{key}.", skip=skip, when=inner)
                    if f.key != f"{key}.kind"
                ]
            continue
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            fields += spec_fields(
                annotation, f"{key}.", skip=skip, when=where, section_when=section_when
            )
            continue
        fields.append(_leaf(key, name, info, annotation, optional, where, spec))
    return fields


def _union_kind(
    key: str, info: FieldInfo, variants: list[type[BaseModel]], where: tuple[Condition, ...]
) -> FormField:
    """A tagged union's `kind` as a choice labelled by the section (`Policy`)."""
    default = _default(info) or {}
    return FormField(
        key=f"{key}.kind",
        label=_label(key.rsplit(".", 1)[-1], FieldInfo()),
        description=info.description or "",
        kind="choice",
        default=default.get("kind"),
        choices=tuple(_kind_of(v) for v in variants),
        when=where,
    )


def _leaf(
    key: str,
    name: str,
    info: FieldInfo,
    annotation: Any,
    optional: bool,
    where: tuple[Condition, ...],
    spec: type[BaseModel],
) -> FormField:
    kind: Any
    choices: tuple[Any, ...] = ()
    label = _label(name, info)
    if name == "kind":
        label = _label(key.split(".")[-2], FieldInfo()) if "." in key else label
    if typing.get_origin(annotation) is Literal:
        kind, choices = "choice", typing.get_args(annotation)
    elif annotation is bool:
        kind = "bool"
    elif annotation is int:
        kind = "int"
    elif annotation is float:
        kind = "fraction" if name in getattr(spec, "FRACTIONS", ()) else "float"
    elif annotation is str:
        kind = "text"
    elif typing.get_origin(annotation) is list and typing.get_args(annotation) == (str,):
        kind = "list"
    else:
        kind = "data"
    return FormField(
        key=key,
        label=label,
        description=info.description or "",
        kind=kind,
        default=_default(info),
        optional=optional,
        choices=choices,
        bounds=_bounds(info),
        when=where,
    )


def applies(field: FormField, values: Mapping[str, Any]) -> bool:
    """Whether `field` applies given the form's current values (its conditions all hold)."""
    return all(values.get(key) in allowed for key, allowed in field.when)


def spec_field(spec: type[BaseModel], key: str) -> FormField:
    """The form field of one dotted key of `spec`."""
    (field,) = [f for f in spec_fields(spec) if f.key == key]
    return field


def spec_param(spec: type[BaseModel], key: str, **overrides: Any) -> param.Parameter:
    """A param standing for one field of `spec` (a component that keeps a spec's scalar
    fields as params, the PopulationEditor): its label, description, default, bounds and
    choices are the spec's; `overrides` for what the component adds or must differ."""
    field = spec_field(spec, key)
    common: dict[str, Any] = {"label": field.label, "doc": field.description}
    if field.kind == "choice":
        made: param.Parameter = param.Selector(
            default=field.default, objects=list(field.choices), **common | overrides
        )
    elif field.kind == "text":
        made = param.String("" if field.default is None else field.default, **common | overrides)
    elif field.kind == "int":
        low, high = (None if b is None or abs(b) >= JS_SAFE else int(b) for b in field.bounds)
        made = param.Integer(field.default, **common | {"bounds": (low, high)} | overrides)
    else:
        raise TypeError(f"{key}: spec_param makes text, choice and int params, not {field.kind}")
    return made
