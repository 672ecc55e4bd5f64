"""Are two groups' answers really different? A round's exact group table and its gaps' verdicts.

With a round's exact answer distributions (`results.exact_store`), each group's exact mean is known,
not estimated: the gap between two groups' exact means is what the model answers them, with no
sampling noise in it. Two things can still make it less than a finding:

- sampling: the agents' drawn (sampled) means fall within `BAND_Z` standard errors of their exact
  means 95% of the time (`group_bands`); a sampled mean outside its band is more than sampling
  noise (a bug, or draws that are not the stored law's);
- the engine's numerics: another valid evaluation of the same prompts (llama.cpp's batch
  numerics) moves each group's exact mean a little; `workbench bench noise` measures the
  largest such shift, and a gap not beyond `NUMERICS_FACTOR` times it is within the numerics
  (`beyond_numerics`, the one rule the bench's report and `group_gaps` apply).

`group_gaps` puts both in plain words for each pair of groups.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from workbench.results.exact_store import ExactRound

__all__ = [
    "BAND_Z",
    "GAP_COLUMNS",
    "NUMERICS_FACTOR",
    "beyond_numerics",
    "group_bands",
    "group_gaps",
]

BAND_Z = 1.96
"""A mean of n draws falls within BAND_Z standard errors of its exact mean 95% of the time."""

NUMERICS_FACTOR = 2.0
"""A gap is beyond the engine's numerics when larger than this many times the largest shift of
a group's exact mean between two evaluations (each of two groups may move by that shift)."""

GAP_COLUMNS: tuple[str, ...] = (
    "group",
    "other",
    "exact_gap",
    "sampled_gap",
    "sampling_band",
    "numerics",
    "verdict",
)
"""`group_gaps`' columns: the two groups, the gap of their exact means (group minus other),
the gap of their sampled means, its 95% sampling band (half width), the numerics' verdict in a
word or three, and the whole verdict in plain words."""


def beyond_numerics(gap: float, largest_shift: float, factor: float = NUMERICS_FACTOR) -> bool:
    """Whether `gap` is more than `factor` times the largest shift the engine's numerics make
    (`workbench bench noise`): a difference no other evaluation of the same prompts closes."""
    return bool(abs(gap) > factor * largest_shift)


def group_bands(found: ExactRound, by: str) -> pd.DataFrame:
    """Per category of persona column `by` (`ExactRound.groups`' columns), the 95% band its
    sampled mean falls in (`band_low`, `band_high`: BAND_Z standard errors of a mean of its n
    draws around the exact mean) and whether it does (`in_band`)."""
    table = found.groups(by)
    half = BAND_Z * table["exact_sd"] / np.sqrt(table["n"].clip(lower=1))
    return table.assign(
        band_low=table["exact_mean"] - half,
        band_high=table["exact_mean"] + half,
        in_band=(table["sampled_mean"] - table["exact_mean"]).abs() <= half,
    )


def group_gaps(bands: pd.DataFrame, by: str, largest_shift: float | None = None) -> pd.DataFrame:
    """Each pair of groups of `group_bands(found, by)`, the largest exact-mean gap first
    (GAP_COLUMNS), with the verdict in plain words; `largest_shift` is `bench noise`'s largest
    group shift for these prompts (None: not measured, and the verdict says so)."""
    rows = []
    for (_, a), (_, b) in combinations(bands.iterrows(), 2):
        if a["exact_mean"] < b["exact_mean"]:
            a, b = b, a  # the higher group first: gaps read as positive numbers
        exact = float(a["exact_mean"] - b["exact_mean"])
        sampled = float(a["sampled_mean"] - b["sampled_mean"])
        half = BAND_Z * float(np.hypot(_error(a), _error(b)))
        numerics, words = _numerics(exact, largest_shift)
        names = (str(a[by]), str(b[by]))
        rows.append(
            {
                "group": names[0],
                "other": names[1],
                "exact_gap": exact,
                "sampled_gap": sampled,
                "sampling_band": half,
                "numerics": numerics,
                "verdict": _verdict(names, exact, sampled, half, words),
            }
        )
    frame = pd.DataFrame(rows, columns=list(GAP_COLUMNS))
    return frame.sort_values("exact_gap", ascending=False, ignore_index=True)


def _error(group: pd.Series) -> float:
    """The standard error of a group's sampled mean (its exact spread over its n draws)."""
    return float(group["exact_sd"]) / np.sqrt(max(int(group["n"]), 1))


def _numerics(gap: float, largest_shift: float | None) -> tuple[str, str]:
    """The numerics' verdict on a gap: a word or three, and the clause."""
    if largest_shift is None or not np.isfinite(largest_shift):
        return "not measured", (
            "the engine's numerics are not measured for these prompts yet (measure them here, "
            "or with workbench bench noise)"
        )
    times = f"{NUMERICS_FACTOR:g} x the largest shift its numerics make, {largest_shift:.2f}"
    if beyond_numerics(gap, largest_shift):
        return "beyond numerics", (
            f"beyond the engine's numerics (more than {times}): the model answers these groups "
            "differently"
        )
    return "within numerics", (
        f"within the engine's numerics (not more than {times}): another evaluation of the same "
        "prompts could close it, so it is no finding about the groups"
    )


def _verdict(
    names: tuple[str, str], exact: float, sampled: float, half: float, numerics: str
) -> str:
    """The whole verdict on one gap, in plain words."""
    head = f"{names[0]}'s exact mean is {exact:.2f} above {names[1]}'s: {numerics}."
    if not np.isfinite(sampled):
        return f"{head} No sampled answers to set beside it."
    off = abs(sampled - exact)
    sampling = (
        f"The sampled gap, {sampled:.2f}, is within sampling noise of it (+/- {half:.2f})."
        if off <= half
        else f"The sampled gap, {sampled:.2f}, is further from it than sampling noise explains "
        f"(+/- {half:.2f})."
    )
    return f"{head} {sampling}"
