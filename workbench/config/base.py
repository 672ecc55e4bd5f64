"""What every spec shares: the strict base model, its one error type, and the value helpers.

`StrictModel` forbids unknown keys, validates on assignment too, and turns pydantic's
`ValidationError` into the `ConfigError` the YAML path reports, with the same one-line message
(`GameSpec: ratio: must be in (0, 1], got 2.0`). The helpers below it are pure functions and
raise plain `ValueError` (the rule in `workbench.errors`); the spec validators call them.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from functools import cache
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from workbench.errors import ConfigError

SHARE_TOLERANCE = 1e-6
"""How far a table of shares may sum from 1 (floats written as decimals rarely sum exactly)."""

MAX_FORMAT_WIDTH = 1000
"""Largest width or precision a template's format spec may ask for (`{name:>1000}`)."""

UnionTags = frozenset[tuple[str, str]]
"""(field, tag) pairs that pydantic puts into error locations for a tagged union field."""


def _location(loc: tuple[int | str, ...], union_tags: UnionTags) -> str:
    """A pydantic error location as `a.b.0.c`, without validator and union-tag entries."""
    parts: list[str] = []
    previous: int | str | None = None
    for part in loc:
        if not str(part).startswith("function-") and (previous, part) not in union_tags:
            parts.append(str(part))
        previous = part
    return ".".join(parts)


IDENTIFIER_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
"""A name that becomes a column and a template placeholder (a dimension's)."""

RUN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
"""A name that starts a folder's name (a run's)."""

PATTERN_WORDS = {
    IDENTIFIER_PATTERN: "must be letters, digits and _, not starting with a digit",
    RUN_NAME_PATTERN: "must be letters, digits, _ . and -, starting with a letter or digit",
}
"""The specs' name patterns in words: what a message says instead of the regular expression."""

KIND_WORDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "dict_type": "must be a mapping of key: value",
    "list_type": "must be a list",
    "missing": "required field is missing; add it",
    "extra_forbidden": "unknown key; remove it or check its spelling",
}
"""pydantic error types whose message needs no context, in the workbench's words."""


def _noun(loc: tuple[int | str, ...], count: int) -> str:
    """What a list or mapping field holds, for a message: `dimensions` holds dimensions."""
    name = str(loc[-1]) if loc and isinstance(loc[-1], str) else ""
    if not name.endswith("s") or name.endswith("ss"):
        return "item" if count == 1 else "items"
    return name[:-1] if count == 1 else name


def plain_message(item: Mapping[str, Any]) -> str:
    """One pydantic error (`ValidationError.errors()` item) in the workbench's words: what the
    field must be and, where it helps, the fix; no "Input should", no regular expression."""
    kind, ctx = item["type"], item.get("ctx") or {}
    loc = tuple(item.get("loc") or ())
    if kind in KIND_WORDS:
        return KIND_WORDS[kind]
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        word, key = {
            "greater_than_equal": ("at least", "ge"),
            "greater_than": ("more than", "gt"),
            "less_than_equal": ("at most", "le"),
            "less_than": ("less than", "lt"),
        }[kind]
        bound = ctx[key]
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)  # a float field's bound 0.0 reads 0
        return f"must be {word} {bound}"
    if kind == "too_short":
        low = int(ctx.get("min_length", 1))
        return f"needs at least {low} {_noun(loc, low)}; add {'one' if low == 1 else 'more'}"
    if kind == "too_long":
        high = int(ctx.get("max_length", 0))
        return f"holds at most {high} {_noun(loc, high)}; remove some"
    if kind == "string_too_short":
        low = int(ctx.get("min_length", 1))
        return "must not be empty" if low == 1 else f"needs at least {low} characters"
    if kind == "string_too_long":
        return f"holds at most {ctx.get('max_length')} characters; shorten it"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        return PATTERN_WORDS.get(pattern, f"must match the pattern {pattern}")
    if kind == "literal_error":
        return f"must be {ctx.get('expected')}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = str(ctx.get("discriminator", "kind")).strip("'")
        if kind == "union_tag_not_found":
            return f"needs its {key}; add a {key} key"
        return f"{key} must be one of {ctx.get('expected_tags')}, got {ctx.get('tag')!r}"
    msg = str(item["msg"]).removeprefix("Value error, ")
    return "must" + msg.removeprefix("Input should") if msg.startswith("Input should") else msg


def validation_problems(
    error: ValidationError, union_tags: UnionTags = frozenset()
) -> tuple[tuple[str, str], ...]:
    """Each problem of a ValidationError as (field path `a.b.0.c`, '' for the whole spec;
    the problem in the workbench's words, with the value that came where it is a scalar)."""
    problems = []
    for item in error.errors():
        msg = plain_message(item)
        if (
            item["type"] not in ("missing", "extra_forbidden", "string_too_short")
            and "input" in item
            and not isinstance(item["input"], dict | list)
            and "got" not in msg
        ):
            msg = f"{msg}, got {item['input']!r}"
        problems.append((_location(item["loc"], union_tags), msg))
    return tuple(dict.fromkeys(problems))


def format_validation_error(
    source: str, error: ValidationError, union_tags: UnionTags = frozenset()
) -> str:
    """One problem per `;`-separated part: `source: field.path: message, got value`.

    `union_tags` are the location entries a tagged union adds (a spec's `union_tags`); they are
    dropped so the path reads as the keys the user wrote.
    """
    return problems_text(source, validation_problems(error, union_tags))


def problems_text(source: str, problems: tuple[tuple[str, str], ...]) -> str:
    """Problems as one line, `source: field.path: message` each, `; `-separated."""
    lines = [f"{source}: {loc}: {msg}" if loc else f"{source}: {msg}" for loc, msg in problems]
    return "; ".join(dict.fromkeys(lines))


@cache
def _field_adapter(model: type[BaseModel], key: str) -> TypeAdapter[Any]:
    info = model.model_fields[key]
    return TypeAdapter(Annotated[(info.annotation, *info.metadata)])  # type: ignore[valid-type]


def field_problem(model: type[BaseModel], key: str, value: Any) -> str | None:
    """Why `value` cannot be `model`'s field `key`, in the words of its spec's messages
    (`must be at least 1, got -5`); None when it can. For a form checking one field as typed."""
    try:
        _field_adapter(model, key).validate_python(value)
    except ValidationError as exc:
        return "; ".join(msg for _, msg in validation_problems(exc))
    return None


@contextmanager
def spec_errors(source: str, union_tags: UnionTags = frozenset()) -> Iterator[None]:
    """Re-raise a pydantic ValidationError inside the block as one-line ConfigError."""
    try:
        yield
    except ValidationError as exc:
        problems = validation_problems(exc, union_tags)
        raise ConfigError(problems_text(source, problems), problems=problems) from None


class StrictModel(BaseModel):
    """Base for specs: unknown keys are errors, values are validated on assignment too.

    Building (`Spec(...)`, `Spec.model_validate(data)`) or assigning a bad value raises
    `ConfigError` named after the class; `validate_data(data, source)` names a file instead.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)

    union_tags: ClassVar[UnionTags] = frozenset()
    """Location entries of this spec's tagged unions, left out of error messages."""

    def __init__(self, /, **data: Any) -> None:
        """Build and validate the spec; ConfigError (not ValidationError) for bad data."""
        with spec_errors(type(self).__name__, self.union_tags):
            super().__init__(**data)

    # Tell pydantic this is still its own __init__, so nested specs are validated in place
    # (their errors keep the outer field path) rather than through this wrapper.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def __setattr__(self, name: str, value: Any) -> None:
        """Assign and validate a field; ConfigError for a bad value (the spec is unchanged)."""
        with spec_errors(type(self).__name__, self.union_tags):
            super().__setattr__(name, value)

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        """Validate plain data; ConfigError named after the class otherwise."""
        return cls.validate_data(obj, cls.__name__, **options)

    @classmethod
    def validate_data(cls, obj: Any, source: str, **options: Any) -> Self:
        """Validate plain data; ConfigError whose message starts with `source` otherwise."""
        with spec_errors(source, cls.union_tags):
            return super().model_validate(obj, **options)


def for_kinds(*kinds: str) -> dict[str, Any]:
    """A field's `json_schema_extra` saying the spec kinds it is for (`model.kind` openai):
    forms show it only there."""
    return {"kinds": list(kinds)}


def parse_number(value: Any) -> Any:
    """Accept a fraction written as text ("2/3") wherever a number is expected.

    Other text must read as a number ("0.5"); ValueError naming what came otherwise.
    """
    if isinstance(value, str):
        try:
            if "/" in value:
                return float(Fraction(value.replace(" ", "")))
            float(value)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a number or a fraction like 2/3, got {value!r}") from None
    return value


FRACTION_DENOMINATOR = 1000
"""Largest denominator a number is shown with as a fraction (`2/3`, `51/100`)."""


def fraction_text(value: float) -> str:
    """A number as a researcher writes it where fractions are accepted: `2/3` for
    0.6666666666666666, `51/100` for 0.51, `100` for 100.0; the exact decimal otherwise.
    Reading the text back (`parse_number`) gives the same float."""
    if not math.isfinite(value):
        return repr(float(value))
    if value == int(value):
        return str(int(value))
    fraction = Fraction(value).limit_denominator(FRACTION_DENOMINATOR)
    if float(fraction) == value:
        return f"{fraction.numerator}/{fraction.denominator}"
    return repr(float(value))


def category_key(key: Any, where: str) -> str:
    """A share-table key as text: YAML reads `18:` as an int and `yes:` as a bool."""
    if key is None:
        raise ValueError(f"{where}: a category name is missing (null key)")
    if isinstance(key, str | int | float | bool):
        return str(key)
    raise ValueError(f"{where}: category names must be text, got {key!r}")


def share_value(value: Any, where: str) -> float:
    """A share as a float: a number, a numeric text or a fraction like "1/6"."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise ValueError(f"{where} must be a number or a fraction like 1/6, got {value!r}")
    try:
        number = parse_number(value)
        return float(number)
    except (TypeError, ValueError):
        raise ValueError(
            f"{where} must be a number or a fraction like 1/6, got {value!r}"
        ) from None


def share_table(table: dict, where: str) -> dict[str, float]:
    """{category: share} with text keys and float shares; ValueError naming the bad entry."""
    out: dict[str, float] = {}
    for key, value in table.items():
        category = category_key(key, where)
        if category in out:
            raise ValueError(f"{where}: category {category!r} is listed twice")
        out[category] = share_value(value, f"{where}: share of {category!r}")
    return out


def _check_format_spec(field: str, spec: str) -> None:
    """ValueError for a format spec with placeholders or a width/precision over the limit."""
    if "{" in spec:
        raise ValueError(
            f"{{{field}:{spec}}}: placeholders inside a format spec are not allowed; "
            "write the width as a number"
        )
    widths = [int(run) for run in re.findall(r"\d+", spec)]
    if widths and max(widths) > MAX_FORMAT_WIDTH:
        raise ValueError(
            f"{{{field}:{spec}}} asks for a width or precision of {max(widths)}; "
            f"at most {MAX_FORMAT_WIDTH} is allowed"
        )


def template_fields(template: str) -> list[str]:
    """The names a `str.format` template fills, in order: "{job.title}" -> "job".

    ValueError for a malformed template, a positional placeholder ("{}", "{0}") or a format
    spec that asks for a huge width ("{job:>999999999}" would allocate gigabytes).
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"not a valid template ({exc}); write literal braces as {{{{ and }}}}"
        ) from None
    names: list[str] = []
    for _, field, spec, _ in parsed:
        if field is None:
            continue
        name = field.split(".", 1)[0].split("[", 1)[0]
        if not name or name.isdigit():
            raise ValueError(
                f"positional placeholder {{{field}}} is not allowed; name a dimension, "
                "e.g. {gender}"
            )
        if spec:
            _check_format_spec(field, spec)
        if name not in names:
            names.append(name)
    return names
