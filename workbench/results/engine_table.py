"""A run's work per model engine, summed for people: per engine over the rounds, per round over
the engines with the largest engine's share of the round's prompts (on a cluster a round takes
as long as its largest share; 1/K is the ideal for K engines).

The rows are `results.layout.ENGINE_WORK_FIELDS` (a `Bundle.engine_work()` frame, or the
`engine_work` events' `engines`). `workbench bundles show`, `workbench runs follow` and the
dashboard's Cluster tab all sum them here. No Panel, no Ray.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from workbench.results.layout import ENGINE_WORK_FIELDS

__all__ = [
    "ENGINE_SUMS",
    "ROUND_SUM_COLUMNS",
    "count",
    "engine_totals",
    "largest_share",
    "round_sums",
    "seconds",
    "shares",
]

ENGINE_SUMS: tuple[str, ...] = ("prompts", "prompt_tokens", "nodes", "visits", "agents", "seconds")
"""The fields of `ENGINE_WORK_FIELDS` that add up, over rounds and over engines."""

ROUND_SUM_COLUMNS: tuple[str, ...] = ("round", "engines", *ENGINE_SUMS, "largest_share")
"""Columns of `round_sums`: per round, its engines and their sums, and the largest share."""


def seconds(value: Any) -> float:
    """Recorded seconds (or any figure) as a finite number; 0 for one missing or not a number
    (the rows come from a file: a damaged one shows as nothing done, never as an error)."""
    try:
        figure = float(value)
    except (TypeError, ValueError):
        return 0.0
    return figure if math.isfinite(figure) else 0.0


def count(value: Any) -> int:
    """A recorded count as a whole number (see `seconds`)."""
    return int(seconds(value))


def shares(prompts: Sequence[Any]) -> list[float]:
    """Each engine's share of a round's prompts (its prompts over their sum, see `count`); nan
    for each when the round walked none."""
    counts = [count(p) for p in prompts]
    total = sum(counts)
    return [c / total if total else float("nan") for c in counts]


def largest_share(prompts: Sequence[Any]) -> float:
    """The largest engine's share of a round's prompts (max/sum); nan when none walked any."""
    return max(shares(prompts), default=float("nan"))


def _frame(work: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Engine-work rows as a frame of `ENGINE_WORK_FIELDS`: round, engine and the counts as
    whole numbers (see `count`), seconds as a number (0 when missing or not one)."""
    frame = pd.DataFrame(work, columns=list(ENGINE_WORK_FIELDS))
    for name in ("round", "engine", *ENGINE_SUMS):
        whole = name != "seconds"
        frame[name] = frame[name].map(count if whole else seconds).astype(int if whole else float)
    return frame


def engine_totals(work: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per engine, in engine order: its node (several joined by ", " when it moved, e.g. a
    model actor respawned elsewhere), the rounds it worked, and `ENGINE_SUMS` summed over
    them."""
    frame = _frame(work)
    columns = ["engine", "node", "rounds", *ENGINE_SUMS]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    grouped = frame.groupby("engine", sort=True)
    totals = grouped[list(ENGINE_SUMS)].sum()
    totals["rounds"] = grouped["round"].nunique()
    totals["node"] = grouped["node"].agg(
        lambda nodes: ", ".join(dict.fromkeys("-" if pd.isna(n) else str(n) for n in nodes))
    )
    return totals.reset_index()[columns]


def round_sums(work: pd.DataFrame | Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per round, in round order (`ROUND_SUM_COLUMNS`): how many engines worked, `ENGINE_SUMS`
    summed over them, and the largest engine's share of the round's prompts."""
    frame = _frame(work)
    if frame.empty:
        return pd.DataFrame(columns=list(ROUND_SUM_COLUMNS))
    grouped = frame.groupby("round", sort=True)
    sums = grouped[list(ENGINE_SUMS)].sum()
    sums["engines"] = grouped["engine"].nunique()
    sums["largest_share"] = grouped["prompts"].agg(lambda p: largest_share(list(p)))
    return sums.reset_index()[list(ROUND_SUM_COLUMNS)]
