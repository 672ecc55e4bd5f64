"""Distributions of guesses by any persona column, round trajectories, tokens, comparisons.

Every function reads a bundle through `workbench.results` and returns a tidy DataFrame (one
row per category, round or guess) ready for bars, heatmaps and quantile boxes. Only valid
answers (status ok, finite guess) enter the statistics; `n` still counts every answer.
`by=None` is the whole population as one category, "all"; a `by=` table has one row per
category and no overall row, so its rows never double-count (the overall row is `by=None`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from workbench.game.rules import round_stats
from workbench.viz.answers import (
    ALL,
    BundleLike,
    as_bundle,
    round_answers,
    rounds_played,
)
from workbench.viz.stats import SUMMARY_COLUMNS, grouped_summary

TRAJECTORY_COLUMNS: tuple[str, ...] = (
    "round",
    "category",
    "n",
    "n_valid",
    "mean",
    "median",
    "std",
    "target",
    "winning_guess",
    "n_winners",
    "share_within_half",
)
"""Columns of `round_trajectories`, the game's round statistics per round and category."""


def guess_counts(
    bundle: BundleLike, round: int | None = None, by: str | None = None
) -> pd.DataFrame:
    """How many valid guesses each category made at each whole number: (category, guess, count,
    share), share being the count over the category's valid answers.

    A guess g is binned at floor(g), so bin g holds [g, g + 1) and integer guesses are exact.
    Only pairs with guesses are listed; `pivot(index="category", columns="guess",
    values="count").fillna(0)` gives the category x guess heatmap. `round` None: the last.
    """
    answers = round_answers(bundle, round, by)
    codes, guesses = answers.valid_only()
    bins = np.floor(guesses).astype(np.int64)
    category, guess, counts = _pair_counts(codes.astype(np.int64), bins)
    per_category = np.bincount(codes, minlength=len(answers.categories))
    frame = pd.DataFrame(
        {
            "category": _labels(answers.categories, category),
            "guess": guess,
            "count": counts,
            "share": counts / per_category[category] if counts.size else np.array([]),
        }
    )
    frame.attrs.update(by=by, round=answers.round)
    return frame


def group_summary(
    bundle: BundleLike, round: int | None = None, by: str | None = None
) -> pd.DataFrame:
    """Per category of `by`: n (answers), n_valid, mean with its 95% t interval, std, min,
    quartiles, median and max of the valid guesses (see `stats.grouped_summary`).

    Quantiles are exact (numpy's linear method). A category whose agents gave no valid answer
    keeps its row, with n_valid 0 and nan statistics. `round` None: the last round.
    """
    answers = round_answers(bundle, round, by)
    codes, guesses = answers.valid_only()
    stats = grouped_summary(codes, guesses, len(answers.categories))
    frame = pd.DataFrame(
        {
            "category": _labels(answers.categories),
            "n": answers.answers_per_category(),
            **{name: stats[name] for name in SUMMARY_COLUMNS},
        }
    )
    frame.attrs.update(by=by, round=answers.round)
    return frame


def round_trajectories(bundle: BundleLike, by: str | None = None) -> pd.DataFrame:
    """The game's statistics per round (and category of `by`): TRAJECTORY_COLUMNS.

    `by=None` reads rounds.parquet. With `by`, each category is scored as its own
    sub-environment, as `game.group_by` does: its target is offset + ratio * its own mean and
    its winning guess the one closest to that target (`game.rules.round_stats`).
    """
    bundle = as_bundle(bundle)
    if by is None:
        rounds = bundle.rounds()
        frame = rounds.assign(category=ALL)[list(TRAJECTORY_COLUMNS)]
        return frame.sort_values("round", ignore_index=True)
    game = bundle.config.game
    rows = []
    for number in rounds_played(bundle):
        answers = round_answers(bundle, number, by)
        order = np.argsort(answers.codes, kind="stable")
        sizes = answers.answers_per_category()
        splits = np.cumsum(sizes)[:-1]
        guesses = np.split(answers.guesses[order], splits)
        valid = np.split(answers.valid[order], splits)
        for category, g, v in zip(answers.categories, guesses, valid, strict=True):
            stats = round_stats(g, v, game).as_dict()
            rows.append({"round": number, "category": category, **stats})
    return pd.DataFrame(rows, columns=list(TRAJECTORY_COLUMNS))


def tokens_per_response(bundle: BundleLike) -> pd.DataFrame:
    """Prompt and completion tokens per answer, per round (the paper's tokens per response).

    Every answer counts, valid or not (its tokens were spent); answers without token counts
    (null: a failed call, an older writer) are left out and `n_counted` says how many remain.
    Behavioural policies record 0 tokens.
    """
    bundle = as_bundle(bundle)
    rows = []
    for number in rounds_played(bundle):
        table = bundle.responses_table(number).select(["prompt_tokens", "completion_tokens"])
        frame = table.to_pandas().astype("float64")
        counted = frame.dropna()
        rows.append(
            {
                "round": number,
                "n": len(frame),
                "n_counted": len(counted),
                "prompt_tokens_mean": counted["prompt_tokens"].mean(),
                "prompt_tokens_total": counted["prompt_tokens"].sum(),
                "completion_tokens_mean": counted["completion_tokens"].mean(),
                "completion_tokens_median": counted["completion_tokens"].median(),
                "completion_tokens_max": counted["completion_tokens"].max(),
                "completion_tokens_total": counted["completion_tokens"].sum(),
            }
        )
    return pd.DataFrame(rows)


def compare_bundles(
    bundles: Sequence[BundleLike], labels: Sequence[str] | None = None, by: str | None = None
) -> pd.DataFrame:
    """Several bundles' `round_trajectories` in one tidy frame, a `label` column first.

    Labels default to the run ids; they must be unique and one per bundle.
    """
    opened = [as_bundle(b) for b in bundles]
    names = [b.run_id for b in opened] if labels is None else list(labels)
    if len(names) != len(opened):
        raise ValueError(f"labels: {len(names)} labels for {len(opened)} bundles")
    if len(set(names)) != len(names):
        raise ValueError(f"labels must be unique, got {names}")
    frames = [
        round_trajectories(b, by).assign(label=name) for b, name in zip(opened, names, strict=True)
    ]
    columns = ["label", *TRAJECTORY_COLUMNS]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)[columns]


def _pair_counts(codes: np.ndarray, bins: np.ndarray) -> tuple[np.ndarray, ...]:
    """The (code, bin) pairs that occur, sorted by code then bin, and how often each does.

    One integer key per pair (code x span + bin offset) counted with bincount when the span of
    keys is small (guesses are integers in a known range: 0.02 s at 1M answers, where unique
    over stacked pairs takes seconds), else np.unique over the keys."""
    if bins.size == 0:
        empty = np.array([], dtype=np.int64)
        return empty, empty, empty
    low = int(bins.min())
    span = int(bins.max()) - low + 1
    keys = codes * span + (bins - low)
    if int(codes.max() + 1) * span <= max(4 * keys.size, 1 << 16):
        counts = np.bincount(keys)
        present = np.flatnonzero(counts)
        counts = counts[present]
    else:
        present, counts = np.unique(keys, return_counts=True)
    return present // span, present % span + low, counts.astype(np.int64)


def _labels(categories: list, codes: np.ndarray | None = None) -> pd.Categorical:
    """Category labels (of `codes`, or all of them) as a Categorical keeping their order."""
    index = np.arange(len(categories)) if codes is None else codes
    return pd.Categorical.from_codes(index, categories=categories)
