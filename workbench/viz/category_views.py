"""The views of `plots.distribution`: per-category histograms, the category x guess heatmap,
quantile boxes and means with intervals, each drawn from `guess_counts` or `group_summary`.

Categories sit on a numeric y axis (`plot_parts.positions`), so boxes, cells, target lines and
reference markers share one coordinate system.
"""

from __future__ import annotations

from typing import Any

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.config import GameSpec
from workbench.results import Bundle
from workbench.viz import colours
from workbench.viz.plot_parts import (
    HEIGHT,
    WIDTH,
    category_axis,
    marker_lines,
    marker_spans,
    opts,
    positions,
    reference_points,
    with_reference_categories,
)

BOX_HALF = 0.3
"""Half the height of a quantile box (categories are 1 apart)."""


def binned(counts: pd.DataFrame, game: GameSpec) -> tuple[np.ndarray, pd.DataFrame]:
    """Bin edges over the game's range and the counts table reindexed onto every bin (0 where
    no guess fell): a Histogram needs contiguous bins; the numbers stay guess_counts'."""
    guesses = counts["guess"].to_numpy()
    low = int(min(np.floor(game.low), guesses.min(initial=game.low)))
    high = int(max(np.floor(game.high), guesses.max(initial=game.high)))
    bins = np.arange(low, high + 1)
    table = counts.set_index("guess")[["count", "share"]].reindex(bins, fill_value=0)
    return np.append(bins, high + 1), table


def bars_view(
    bundle: Bundle,
    counts: pd.DataFrame,
    by: str,
    row: pd.Series,
    reference: pd.DataFrame | None,
) -> hv.NdLayout:
    """One histogram of shares per category (small multiples), the target and the category's
    reference means as lines."""
    panels = {}
    for category in counts["category"].cat.categories:
        edges, table = binned(counts[counts["category"] == category], bundle.config.game)
        bars = hv.Histogram(
            (edges, table["share"].to_numpy(), table["count"].to_numpy()),
            kdims="guess",
            vdims=["share", "count"],
        )
        bars = opts(bars, tools=["hover"], color=colours.GUESSES, line_color="white", alpha=0.85)
        markers = {"target": row["target"]}
        if reference is not None:
            mine = reference[reference["category"] == category]
            markers |= {f"{r.label}": r.mean for r in mine.itertuples()}
        panel = hv.Overlay([bars, *marker_spans(markers)])
        panels[category] = opts(panel, width=WIDTH // 3 + 40, height=HEIGHT * 2 // 3)
    layout = hv.NdLayout(panels, kdims=[by], sort=False).cols(min(3, max(len(panels), 1)))
    lines = f"{colours.TARGET_WORD} line: target"
    lines += ", black: reference means" if reference is not None else ""
    title = f"{bundle.run_id}: round {counts.attrs['round']} by {by}, share of each group ({lines})"
    return opts(layout, title=title)


def heatmap_view(
    bundle: Bundle,
    counts: pd.DataFrame,
    by: str,
    row: pd.Series,
    reference: pd.DataFrame | None,
) -> hv.Overlay:
    """Category x guess cells coloured by the category's share at that guess."""
    categories = with_reference_categories(counts["category"].cat.categories, reference)
    at = positions(categories)
    cells = counts.assign(
        x0=counts["guess"].astype(float),
        x1=counts["guess"] + 1.0,
        y0=counts["category"].map(at).astype(float) - 0.5,
        y1=counts["category"].map(at).astype(float) + 0.5,
        category=counts["category"].astype(str),
    )
    rects = hv.Rectangles(
        cells, kdims=["x0", "y0", "x1", "y1"], vdims=["share", "count", "guess", "category"]
    )
    rects = opts(
        rects,
        color="share",
        cmap=colours.share_palette(),
        colorbar=True,
        line_alpha=0,
        tools=["hover"],
        clabel="share of the group",
    )
    parts: list[Any] = [rects, *marker_lines({"target": row["target"]})]
    if reference is not None:
        parts += reference_points(reference, at, with_interval=False)
    title = f"{bundle.run_id}: round {counts.attrs['round']} guesses by {by}"
    return opts(
        hv.Overlay(parts),
        title=title,
        xlabel="guess",
        width=WIDTH,
        legend_position="top_right",
        **category_axis(categories, by),
    )


def summary_view(
    bundle: Bundle,
    summary: pd.DataFrame,
    by: str,
    row: pd.Series,
    reference: pd.DataFrame | None,
    kind: str,
) -> hv.Overlay:
    """Quantile boxes or means with intervals per category, from group_summary."""
    categories = with_reference_categories(summary["category"].cat.categories, reference)
    at = positions(categories)
    frame = summary.assign(
        position=summary["category"].map(at).astype(float),
        category=summary["category"].astype(str),
    ).dropna(subset=["mean"])  # a category with no valid answer keeps its tick, no glyph
    hover = ["category", "n", "n_valid", "ci_low", "ci_high", "min", "q1", "median", "q3", "max"]
    dots = hv.Scatter(frame, kdims="mean", vdims=["position", *hover], label="group mean")
    mean = opts(dots, color=colours.GUESSES, line_color="white", size=9, tools=["hover"])
    if kind == "quantiles":
        boxes = frame.assign(y0=frame["position"] - BOX_HALF, y1=frame["position"] + BOX_HALF)
        rects = hv.Rectangles(
            boxes,
            kdims=["q1", "y0", "q3", "y1"],
            vdims=[*(h for h in hover if h not in ("q1", "q3")), "mean"],
        )
        lines = boxes.assign(median_end=boxes["median"], position_end=boxes["position"])
        medians = hv.Segments(lines, kdims=["median", "y0", "median_end", "y1"])
        low = hv.Segments(lines, kdims=["min", "position", "q1", "position_end"])
        high = hv.Segments(lines, kdims=["q3", "position", "max", "position_end"])
        box = {"color": colours.GUESSES, "line_color": colours.GUESSES}
        parts: list[Any] = [
            opts(low, color=colours.GUESSES, line_width=1.5),
            opts(high, color=colours.GUESSES, line_width=1.5),
            opts(rects, alpha=0.4, tools=["hover"], **box),
            opts(medians, color="white", line_width=3),
            mean,
        ]
        what = "quartiles, median, min-max, mean"
    else:
        errors = frame.assign(
            neg=frame["mean"] - frame["ci_low"], pos=frame["ci_high"] - frame["mean"]
        )
        bars = hv.ErrorBars(errors, kdims="mean", vdims=["position", "neg", "pos"], horizontal=True)
        parts = [opts(bars, color=colours.GUESSES, line_width=2), mean]
        what = "mean and 95% interval"
    parts += marker_lines({"target": row["target"]})
    if reference is not None:
        parts += reference_points(reference, at)
    title = f"{bundle.run_id}: round {summary.attrs['round']} by {by} ({what})"
    return opts(
        hv.Overlay(parts),
        title=title,
        xlabel="guess",
        width=WIDTH,
        legend_position="right",
        **category_axis(categories, by),
    )
