"""Persona text for sampled agents and a short note on the population's composition.

Text is formatted once per unique combination of attribute values and mapped back through
integer codes, so a million agents cost a handful of string formats.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workbench.config import PopulationSpec, RunConfig, template_fields
from workbench.errors import ConfigError
from workbench.population.shares import marginal_shares

__all__ = ["generic_persona", "persona_texts", "population_note"]

# Above this many possible combinations, find the present ones by sorting instead of a lookup table.
_MAX_LOOKUP = 1 << 22


def persona_texts(spec: PopulationSpec, attributes: pd.DataFrame) -> pd.Series:
    """Persona text per row of `attributes` (a Categorical Series on the same index).

    Uses `spec.persona_template` when set, else `generic_persona`.
    """
    template = spec.persona_template
    if template is None:
        names = [dim.name for dim in spec.dimensions]
    else:
        used = set(template_fields(template))
        names = [dim.name for dim in spec.dimensions if dim.name in used]
    missing = [name for name in names if name not in attributes.columns]
    if missing:
        raise ConfigError(
            f"attributes have no column for dimensions {missing}; columns: {list(attributes)}"
        )
    codes, uniques = _factorize_columns(attributes, names)
    combined, inverse = _combine_codes(codes, [len(u) for u in uniques])
    texts: list[str] = []
    for combo in combined:
        values = {name: str(u[c]) for name, u, c in zip(names, uniques, combo, strict=True)}
        texts.append(_render(template, values))
    # Different combinations may read the same (a template that skips a dimension): deduplicate.
    categories, text_codes = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
    final = text_codes.astype(np.int32)[inverse]
    persona = pd.Categorical.from_codes(final, categories=list(categories), validate=False)
    return pd.Series(persona, index=attributes.index, name="persona")


def generic_persona(values: dict[str, str]) -> str:
    """A neutral sentence naming each dimension and value, e.g. "... whose gender is female"."""
    parts = [f"whose {name.replace('_', ' ')} is {value}" for name, value in values.items()]
    if not parts:
        return "You are a person."
    body = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"You are a person {body}."


def population_note(spec: PopulationSpec) -> str:
    """A short sentence on the population's (marginal) shares per dimension, for game prompts."""
    pieces = []
    for name, shares in marginal_shares(spec).items():
        items = [f"{_percent(s)} {c}" for c, s in shares.items() if s > 0]
        listed = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
        pieces.append(f"by {name.replace('_', ' ')}, {listed}")
    return "The players are a mix: " + "; ".join(pieces) + "."


def prompt_note(config: RunConfig) -> str | None:
    """The population note a run's prompts carry: `population_note` when the config's prompt
    asks for it (`game.prompt.population_note`) and its population is resolved, else None."""
    population = config.population
    if config.game.prompt.population_note and isinstance(population, PopulationSpec):
        return population_note(population)
    return None


def _render(template: str | None, values: dict[str, str]) -> str:
    """Fill the template (or the generic sentence) for one combination of values."""
    if template is None:
        return generic_persona(values)
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError, AttributeError) as exc:
        raise ConfigError(f"persona_template {template!r} cannot be filled: {exc!r}") from None


def _factorize_columns(
    attributes: pd.DataFrame, names: list[str]
) -> tuple[list[np.ndarray], list[pd.Index]]:
    """Integer codes and their values for each named column; missing values are an error."""
    codes, uniques = [], []
    for name in names:
        column = attributes[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            col_codes = np.asarray(column.cat.codes)
            values = column.cat.categories
        else:
            col_codes, values = pd.factorize(column, use_na_sentinel=True)
        if (col_codes < 0).any():
            raise ConfigError(f"attribute column {name!r} has missing values")
        codes.append(col_codes.astype(np.int64, copy=False))
        uniques.append(pd.Index(values))
    return codes, uniques


def _combine_codes(codes: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Present combinations (rows of per-column codes) and each row's index into them."""
    n = len(codes[0]) if codes else 0
    if not codes:
        return np.zeros((1, 0), dtype=np.int64), np.zeros(n, dtype=np.intp)
    if math.prod(max(size, 1) for size in sizes) >= 2**62:  # keys would overflow: sort rows
        present_rows, inverse = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
        return present_rows, inverse.reshape(-1)
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for col_codes, size in zip(reversed(codes), reversed(sizes), strict=True):
        key += col_codes * radix
        radix *= max(size, 1)
    if radix <= _MAX_LOOKUP:
        present = np.flatnonzero(np.bincount(key, minlength=radix))
        lookup = np.zeros(radix, dtype=np.int32)
        lookup[present] = np.arange(present.size, dtype=np.int32)
        inverse = lookup[key]
    else:
        present, inverse = np.unique(key, return_inverse=True)
    combos = np.empty((present.size, len(codes)), dtype=np.int64)
    rest = present.copy()
    for j in range(len(codes) - 1, -1, -1):
        combos[:, j] = rest % max(sizes[j], 1)
        rest //= max(sizes[j], 1)
    return combos, inverse


def _percent(share: float) -> str:
    """A share as a compact percentage: 0.5 -> "50%", 1/6 -> "16.7%", 0.004 -> "0.4%"."""
    text = f"{share * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text}%" if text != "0" else f"{share * 100:.2g}%"
