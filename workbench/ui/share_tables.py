"""A dimension's share tables as the PopulationEditor holds them: plain data and pure functions.

A dimension is {name, given, shares}: `shares` is one table {category: share}, or with `given`
one table per parent category. Here are the edits on those tables that need arithmetic (a new
category's share, Normalize, rescaling the others as a share is typed) and the one text for a
table that does not sum to 1 (`table_note`) or cannot be normalized (`normalize_problem`), so
the editor's notes and its Normalize refusal say the same thing.
"""

from __future__ import annotations

from typing import Any

from workbench.config import SHARE_TOLERANCE

__all__ = [
    "SHARE_DIGITS",
    "Table",
    "add_to_table",
    "categories",
    "equal_split",
    "normalize_problem",
    "normalized",
    "rescale_others",
    "table_note",
    "tables",
    "tidy",
    "where",
]

Table = dict[str, float]

SHARE_DIGITS = 12
"""Decimals a computed share keeps: 0.4 * 0.2 / 0.8 is 0.1, not 0.09999999999999999 in the
share's input box; the shares still sum to 1 within 1e-11."""


def tidy(share: float) -> float:
    """A computed share rounded to SHARE_DIGITS decimals."""
    return round(share, SHARE_DIGITS)


def tables(dim: dict[str, Any]) -> dict[str, Table]:
    """A dimension's share tables by parent category ('' for an unconditional dimension)."""
    if dim.get("given") is None:
        return {"": dim["shares"]}
    return dim["shares"]


def categories(dim: dict[str, Any]) -> list[str]:
    """A dimension's categories, in first-seen order over its tables."""
    seen: dict[str, None] = {}
    for table in tables(dim).values():
        seen.update(dict.fromkeys(table))
    return list(seen)


def where(dim: dict[str, Any], parent: str) -> str:
    """A table as messages name it: `dimension 'job'`, `dimension 'job' given education='x'`."""
    suffix = f" given {dim['given']}={parent!r}" if parent else ""
    return f"dimension {dim['name']!r}{suffix}"


def equal_split(names: list[str]) -> Table:
    """Equal shares for `names`, summing to 1."""
    return {name: tidy(1 / len(names)) for name in names} if names else {}


def add_to_table(table: Table, category: str, share: float | None) -> None:
    """Add `category` to a table. With `share` None: a table that is empty or still all-equal
    (nobody has shaped it: a new dimension's, or one of equal shares) is split equally again
    over its categories and the new one; a table whose shares differ keeps them, and the new
    category starts at 0 (the table still sums to what it did). A given `share` is set as is."""
    if share is not None:
        table[category] = float(share)
    elif len(set(table.values())) <= 1:
        table.update(equal_split([*table, category]))
    else:
        table[category] = 0.0


def normalize_problem(table: Table) -> str | None:
    """Why Normalize cannot rescale a table (None: it can): a share below 0."""
    negative = [c for c, s in table.items() if s < 0]
    if negative:
        return f"the share of {negative[0]!r} is negative; set it to 0 or more"
    return None


def normalized(table: Table) -> Table:
    """The table rescaled to sum to 1; a table whose shares are all 0 is split equally.
    ValueError (normalize_problem's text) for a table that cannot be."""
    problem = normalize_problem(table)
    if problem is not None:
        raise ValueError(problem)
    total = sum(table.values())
    if total <= 0:
        return equal_split(list(table))
    return {category: tidy(share / total) for category, share in table.items()}


def table_note(dim: dict[str, Any], parent: str, table: Table) -> str | None:
    """The note on a table that does not sum to 1 (None when it does, or is empty): its sum
    and the fix, where Normalize is the fix or why it is not."""
    total = sum(table.values())
    if not table or abs(total - 1) <= SHARE_TOLERANCE:
        return None
    problem = normalize_problem(table)
    if problem is not None:
        fix = f"Normalize cannot rescale them: {problem}"
    elif total <= 0:
        fix = "press Normalize to split them equally"
    else:
        fix = "press Normalize to rescale them"
    return f"{where(dim, parent)}: shares sum to {total:.4g}, not 1; {fix}"


def rescale_others(table: Table, category: str, share: float) -> None:
    """Set `category` to `share` and scale the other shares so the table sums to 1."""
    others = [c for c in table if c != category]
    if not others:
        table[category] = 1.0
        return
    rest = 1.0 - share
    total = sum(table[c] for c in others)
    for c in others:
        table[c] = tidy(rest * table[c] / total if total > 0 else rest / len(others))
    table[category] = share
