"""Interactive plots of bundles: HoloViews objects for the bokeh backend, with hover tools.

Every number drawn comes from the viz tables (`guess_counts`, `group_summary`,
`round_trajectories`, `tokens_per_response`, `compare_bundles`): the plots only place them, so a
million agents cost what the tables cost and the browser gets a few hundred glyphs. Quantile
boxes are drawn from the exact quantiles (whiskers to min and max), never from raw values, so no
outlier list is sent. `agents` (in `agents_view`) is the one per-agent view, rasterized with
datashader past `agents_view.RASTERIZE_ABOVE` points. In a notebook run `hv.extension("bokeh")`
once; `hv.extension("bokeh", "matplotlib")` also gives each plot matplotlib options, so a copy
saved with `save_figure` keeps its titles, ticks and colours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import holoviews as hv
import pandas as pd

from workbench.config import GameSpec
from workbench.errors import ConfigError
from workbench.game import equilibrium, target
from workbench.results.live_round import RoundSoFar
from workbench.viz import colours
from workbench.viz.agents_view import RASTERIZE_ABOVE, agents
from workbench.viz.answers import BundleLike, Bundles, as_bundle, labelled
from workbench.viz.category_views import bars_view, binned, heatmap_view, summary_view
from workbench.viz.distributions import (
    compare_bundles,
    group_summary,
    guess_counts,
    round_trajectories,
    tokens_per_response,
)
from workbench.viz.exact_views import exact_curve, exact_groups
from workbench.viz.plot_parts import (
    HEIGHT,
    WIDTH,
    checked_reference,
    colour,
    marker_lines,
    opts,
    round_row,
)

__all__ = [
    "KINDS",
    "RASTERIZE_ABOVE",
    "agents",
    "compare",
    "distribution",
    "exact_groups",
    "histogram",
    "round_so_far",
    "tokens",
    "trajectories",
]

KINDS: tuple[str, ...] = ("bars", "heatmap", "quantiles", "means")
"""The kinds of `distribution`."""

TRAJECTORY_LINES: tuple[tuple[str, str, str, str], ...] = (
    ("mean", "mean", colours.GUESSES, "solid"),
    ("median", "median", colours.MEDIAN, "solid"),
    ("target", "target", colours.TARGET, "dashed"),
    ("winning_guess", "winning guess", colours.WINNING, "solid"),
)
"""The whole population's lines in `trajectories`: column, label, colour, dash."""


def histogram(bundle: BundleLike, round: int | None = None) -> hv.Overlay:
    """A round's guesses (the last round when None) per whole number, with the target, the
    equilibrium and the winning guess marked; bin g holds guesses in [g, g + 1). Where the run
    kept the round's exact distributions, the expected counts are drawn over the bars."""
    bundle = as_bundle(bundle)
    counts = guess_counts(bundle, round)
    number = counts.attrs["round"]
    row = round_row(bundle, number)
    markers = {
        "target": row["target"],
        "equilibrium": equilibrium(bundle.config.game),
        "winning guess": row["winning_guess"],
    }
    title = f"{bundle.run_id}: round {number}, {int(row['n_valid']):,} valid of {int(row['n']):,}"
    game = bundle.config.game
    exact = [exact_curve(bundle.exact(number), game)] if number in bundle.exact_rounds else []
    return _histogram(counts, bundle.config.game, markers, title, exact)


def round_so_far(so_far: RoundSoFar, game: GameSpec, title: str) -> hv.Overlay:
    """A round in progress (`results.live_round`): its valid guesses so far per whole number,
    the target of the mean so far ("target so far": the round's own is not known yet) and the
    equilibrium; drawn as `histogram` draws a finished round."""
    shares = so_far.counts / so_far.valid if so_far.valid else so_far.counts * 0.0
    counts = pd.DataFrame({"guess": so_far.bins, "count": so_far.counts, "share": shares})
    markers = {"target so far": target(so_far.mean, game), "equilibrium": equilibrium(game)}
    return _histogram(counts, game, markers, title)


def _histogram(
    counts: pd.DataFrame,
    game: GameSpec,
    markers: dict[str, float],
    title: str,
    over: Sequence[hv.Element] = (),
) -> hv.Overlay:
    """Bars of (guess, count, share) over the game's range, `over` drawn over them (the exact
    distribution), with marker lines."""
    edges, table = binned(counts, game)
    bars = hv.Histogram(
        (edges, table["count"].to_numpy(), table["share"].to_numpy()),
        kdims="guess",
        vdims=["count", "share"],
    )
    bars = opts(bars, tools=["hover"], color=colours.GUESSES, line_color="white", alpha=0.85)
    overlay = hv.Overlay([bars, *over, *marker_lines(markers)])
    return opts(overlay, title=title, width=WIDTH, height=HEIGHT, legend_position="top_right")


def distribution(
    bundle: BundleLike,
    by: str,
    round: int | None = None,
    kind: str = "bars",
    reference: pd.DataFrame | None = None,
) -> hv.Overlay | hv.NdLayout:
    """Guesses of a round by persona column `by`, drawn as `kind`:

    - "bars": per category, the share of its guesses at each whole number (small multiples);
    - "heatmap": category x guess cells coloured by share;
    - "quantiles": boxes q1-q3 with the median, whiskers to min and max, the mean a dot;
    - "means": the mean with its 95% t interval.

    The round's target is a line; `reference` (columns category, mean; optional label, low,
    high) adds markers: human groups or the paper's numbers, other categories below the bundle's.
    """
    if kind not in KINDS:
        raise ConfigError(f"kind: {kind!r} is not a distribution kind; choose from {list(KINDS)}")
    bundle = as_bundle(bundle)
    reference = checked_reference(reference, "category", ("label", "low", "high"))
    if kind in ("bars", "heatmap"):
        counts = guess_counts(bundle, round, by)
        row = round_row(bundle, counts.attrs["round"])
        draw = bars_view if kind == "bars" else heatmap_view
        return draw(bundle, counts, by, row, reference)
    summary = group_summary(bundle, round, by)
    row = round_row(bundle, summary.attrs["round"])
    return summary_view(bundle, summary, by, row, reference, kind)


def trajectories(
    bundle: BundleLike, by: str | None = None, reference: pd.DataFrame | None = None
) -> hv.Overlay:
    """Per round: mean, median, target and winning guess (by=None), or each category's mean,
    with its own target dashed when the game was scored by that column (game.group_by), else
    the population's. `reference` rows (round, mean, optional label) are markers."""
    bundle = as_bundle(bundle)
    reference = checked_reference(reference, "round")
    parts: list[Any] = []
    if by is None:
        table = round_trajectories(bundle)
        for column, label, color, dash in TRAJECTORY_LINES:
            parts += _curve(table, column, label, color, dash)
    else:
        table = round_trajectories(bundle, by)
        own = bundle.config.game.group_by == by
        for i, (category, rows) in enumerate(table.groupby("category", sort=False)):
            parts += _curve(rows, "mean", f"{category}", colour(i), "solid")
            if own:
                parts += _curve(rows, "target", f"{category} target", colour(i), "dashed")
        if not own:
            target_line = round_trajectories(bundle)
            parts += _curve(target_line, "target", "target", colours.TARGET, "dashed")
    if reference is not None:
        for i, (label, rows) in enumerate(reference.groupby("label", sort=False)):
            points = _statistic(rows, "round", "mean", str(label))
            color = colours.reference(i)
            parts.append(opts(points, marker="diamond", size=11, color=color, tools=["hover"]))
    rounds = sorted(int(r) for r in table["round"].unique())
    title = f"{bundle.run_id}: rounds" + (f" by {by}" if by else "")
    return opts(
        hv.Overlay(parts),
        title=title,
        xticks=rounds,
        xlabel="round",
        ylabel="guess",
        width=WIDTH,
        height=HEIGHT,
        legend_position="right",
    )


def compare(
    bundles: Bundles, round: int | None = None, reference: pd.DataFrame | None = None
) -> hv.Overlay:
    """Several bundles side by side: each one's mean (bar), median, target and winning guess in
    `round` (None: each bundle's last round). `bundles` a mapping label: bundle, or a sequence
    labelled by run id; `reference` rows (label, mean) are markers at their label."""
    named = labelled(bundles)
    opened, labels = list(named.values()), list(named)
    reference = checked_reference(reference, "label", ())
    table = compare_bundles(opened, labels)
    if round is None:
        table = table[table["round"] == table.groupby("label")["round"].transform("max")]
    else:
        missing = sorted(set(labels) - set(table.loc[table["round"] == round, "label"]))
        if missing:
            raise ConfigError(f"round: bundles {missing} have no round {round}; give another")
        table = table[table["round"] == round]
    hover = ["round", "median", "target", "winning_guess", "n_valid"]
    bars = hv.Bars(table.rename(columns={"mean": "guess"}), "label", ["guess", *hover])
    mean = opts(bars.relabel("mean"), tools=["hover"], color=colours.GUESSES, alpha=0.8)
    parts: list[Any] = [mean]
    for column, label, marker, color in (
        ("median", "median", "circle", colours.MEDIAN),
        ("target", "target", "triangle", colours.TARGET),
        ("winning_guess", "winning guess", "square", colours.WINNING),
    ):
        points = _statistic(table, "label", column, label)
        edge = {"line_color": "black"} if marker == "circle" else {}
        parts.append(opts(points, marker=marker, size=14, color=color, tools=["hover"], **edge))
    if reference is not None:
        for i, (label, rows) in enumerate(reference.groupby("label", sort=False)):
            points = _statistic(rows.assign(label=rows["label"].astype(str)), "label", "mean", "")
            points = points.relabel(f"reference {label}")
            color = colours.reference(i)
            parts.append(opts(points, marker="diamond", size=12, color=color, tools=["hover"]))
    return opts(
        hv.Overlay(parts),
        title="bundles side by side" + (f", round {round}" if round is not None else ""),
        xlabel="bundle",
        ylabel="guess",
        width=WIDTH,
        height=HEIGHT,
        xrotation=30 if len(labels) > 4 else 0,
        legend_position="right",
    )


def tokens(bundles: Bundles) -> hv.Bars:
    """Completion tokens per response, per bundle (and round when any played several), with the
    prompt tokens, median, max and counted answers on hover (behavioural policies record 0)."""
    named = labelled(bundles)
    opened, labels = list(named.values()), list(named)
    frames = [tokens_per_response(b).assign(label=n) for b, n in zip(opened, labels, strict=True)]
    table = pd.concat(frames, ignore_index=True)
    several = table["round"].nunique() > 1
    hover = ["prompt_tokens_mean", "completion_tokens_median", "completion_tokens_max", "n_counted"]
    kdims = ["label", "round"] if several else ["label"]
    bars = hv.Bars(table, kdims=kdims, vdims=["completion_tokens_mean", *hover])
    return opts(
        bars,
        tools=["hover"],
        title="tokens per response",
        ylabel="completion tokens per response (mean)",
        xlabel="bundle, round" if several else "bundle",
        width=WIDTH,
        height=HEIGHT,
        xrotation=30 if len(labels) > 4 else 0,
        color=colours.GUESSES,
    )


def _statistic(table: pd.DataFrame, x: str, column: str, label: str) -> hv.Scatter:
    """Points of `column` over `x` as (x, guess, statistic): a label never names a dimension
    (HoloViews' matplotlib backend would read a label equal to a dimension's name as that
    dimension's values)."""
    data = table[[x, column]].dropna().rename(columns={column: "guess"})
    return hv.Scatter(data.assign(statistic=column), x, ["guess", "statistic"], label=label)


def _curve(table: pd.DataFrame, column: str, label: str, color: str, dash: str) -> list[Any]:
    """A line of `column` over rounds with dots carrying the hover."""
    dots = _statistic(table, "round", column, label)
    line = hv.Curve(dots, "round", "guess", label=label)
    return [
        opts(line, color=color, line_dash=dash, line_width=2),
        opts(dots, color=color, size=7, tools=["hover"]),
    ]
