"""Shared parts of the interactive plots: the bokeh backend, marker lines, category axes and
reference tables checked once.

Category views put categories on a numeric axis (position k-1-i for the i-th category, so the
first is on top, tick labels the category names): boxes, intervals, heat cells, target lines
and reference markers then share one coordinate system, which bokeh's factor axes do not allow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import holoviews as hv
import holoviews.plotting.bokeh  # noqa: F401  (registers the bokeh backend and its options)
import numpy as np
import pandas as pd

from workbench.errors import ConfigError
from workbench.results import Bundle
from workbench.viz import colours
from workbench.viz.distributions import round_trajectories

BACKEND = "bokeh"
"""The backend the plots' options are set for (hv.render(obj, backend="bokeh"))."""

WIDTH, HEIGHT = 720, 360
"""Size of one plot in pixels; small multiples use a third of the width each."""

MARKERS: dict[str, tuple[str, str]] = {
    "target": (colours.TARGET, "solid"),
    "target so far": (colours.TARGET, "dashed"),
    "equilibrium": (colours.EQUILIBRIUM, "dashed"),
    "winning guess": (colours.WINNING, "dotted"),
}
"""Colour (`viz.colours`) and dash of the game's marker lines, by label."""

REFERENCE_SHAPES: tuple[str, ...] = ("diamond", "triangle", "square", "inverted_triangle", "star")
"""Reference markers, one shape per reference label."""


_MPL_NAMES = {"line_width": "linewidth", "line_dash": "linestyle", "line_color": "edgecolor"}
_MPL_DROP = frozenset({"tools", "width", "height", "line_alpha", "hover_tooltips"})
_MPL_VALUES = {
    "linestyle": {"solid": "-", "dashed": "--", "dotted": ":", "dashdot": "-."},
    "marker": {
        "diamond": "D",
        "triangle": "^",
        "square": "s",
        "inverted_triangle": "v",
        "star": "*",
        "circle": "o",
        "dash": "_",
    },
}


def opts(element: Any, **options: Any) -> Any:
    """`element.opts(...)` for the bokeh backend, whatever backend is current; the same options
    in matplotlib's names too when that backend is loaded (hv.extension("bokeh", "matplotlib")
    before plotting), so a saved static copy (save_figure) keeps titles, ticks and colours."""
    element = element.opts(backend=BACKEND, **options)
    if "matplotlib" not in hv.Store.renderers:
        return element
    mpl: dict[str, Any] = {}
    for name, value in options.items():
        if name in _MPL_DROP:
            continue
        name = _MPL_NAMES.get(name, name)
        mpl[name] = _MPL_VALUES[name].get(value, value) if name in _MPL_VALUES else value
    if options.get("line_alpha") == 0:
        mpl["linewidth"] = 0
    if "size" in mpl:
        mpl["s"] = mpl.pop("size") ** 2
    if "width" in options and "height" in options and not isinstance(element, hv.Layout):
        mpl["aspect"] = options["width"] / options["height"]
        mpl["fig_size"] = 100 * options["width"] / 300  # matplotlib's default is 300 px wide
    return element.opts(backend="matplotlib", **mpl)


def colour(i: int) -> str:
    """The i-th category's or bundle's colour (`viz.colours.category`)."""
    return colours.category(i)


def round_row(bundle: Bundle, number: int) -> pd.Series:
    """The whole population's statistics of round `number` (rounds.parquet's row)."""
    rounds = round_trajectories(bundle)
    return rounds[rounds["round"] == number].iloc[0]


def marker_lines(markers: Mapping[str, float], dim: str = "guess") -> list[hv.VLines]:
    """One labelled vertical line per finite marker value (legend entry and hover)."""
    lines = []
    for label, value in markers.items():
        if value is None or not np.isfinite(value):
            continue
        color, dash = MARKERS.get(label, (colours.REFERENCES[0], "dashdot"))
        frame = pd.DataFrame({dim: [float(value)], "marker": [label]})
        line = hv.VLines(frame, kdims=dim, vdims="marker", label=label)
        lines.append(opts(line, color=color, line_dash=dash, line_width=2, tools=["hover"]))
    return lines


def marker_spans(markers: Mapping[str, float]) -> list[hv.VLine]:
    """The same lines as `marker_lines` as plain spans: no legend entry or hover, a third of
    the rendering cost, for small multiples whose title names the lines."""
    spans = []
    for label, value in markers.items():
        if value is None or not np.isfinite(value):
            continue
        color, dash = MARKERS.get(label, (colours.REFERENCES[0], "dashdot"))
        span = hv.VLine(float(value), label=label)
        spans.append(opts(span, color=color, line_dash=dash, line_width=2))
    return spans


def positions(categories: Sequence[Any]) -> dict[Any, int]:
    """Each category's position on a category axis, the first on top."""
    return {c: len(categories) - 1 - i for i, c in enumerate(categories)}


def category_axis(categories: Sequence[Any], by: str | None) -> dict[str, Any]:
    """Plot options that label a numeric category axis (y) with the category names."""
    ticks = [(p, str(c)) for c, p in positions(categories).items()]
    return {
        "yticks": ticks,
        "ylim": (-0.6, len(categories) - 0.4),
        "ylabel": by or "",
        "height": max(HEIGHT // 2, 60 + 45 * len(categories)),
    }


def with_reference_categories(categories: Iterable[Any], reference: pd.DataFrame | None) -> list:
    """The bundle's categories, then the reference's other categories (human groups), in order."""
    out = list(categories)
    if reference is not None:
        out += [c for c in dict.fromkeys(reference["category"]) if c not in out]
    return out


def checked_reference(
    reference: pd.DataFrame | None, key: str, optional: tuple[str, ...] = ("label",)
) -> pd.DataFrame | None:
    """`reference` with columns `key` and `mean` (and `label`, default "reference"), or None.

    ConfigError naming the columns it needs when it is not such a table.
    """
    if reference is None:
        return None
    needed = [key, "mean"]
    if not isinstance(reference, pd.DataFrame) or not set(needed) <= set(reference.columns):
        got = list(reference.columns) if isinstance(reference, pd.DataFrame) else type(reference)
        raise ConfigError(
            f"reference: a DataFrame with columns {needed} (optional {list(optional)}), got {got}"
        )
    frame = reference.copy()
    if "label" not in frame.columns:
        frame["label"] = "reference"
    frame["mean"] = pd.to_numeric(frame["mean"], errors="raise").astype(float)
    return frame.reset_index(drop=True)


def reference_points(
    reference: pd.DataFrame, at: Mapping[Any, float], with_interval: bool = True
) -> list[Any]:
    """Reference means as labelled markers at (mean, position of their category), one shape per
    label, with horizontal low-high bars where the table has them."""
    parts: list[Any] = []
    for i, (label, rows) in enumerate(reference.groupby("label", sort=False)):
        frame = rows.assign(position=rows["category"].map(at).astype(float))
        frame = frame.dropna(subset=["mean", "position"])
        frame["category"] = frame["category"].astype(str)
        shape = REFERENCE_SHAPES[i % len(REFERENCE_SHAPES)]
        points = hv.Scatter(frame, kdims="mean", vdims=["position", "category"], label=str(label))
        color = colours.reference(i)
        parts.append(opts(points, marker=shape, size=11, color=color, tools=["hover"]))
        if with_interval and {"low", "high"} <= set(frame.columns):
            bars = frame.dropna(subset=["low", "high"])
            bars = bars.assign(neg=bars["mean"] - bars["low"], pos=bars["high"] - bars["mean"])
            errors = hv.ErrorBars(
                bars, kdims="mean", vdims=["position", "neg", "pos"], horizontal=True
            )
            parts.append(opts(errors, color=color, line_width=1))
    return parts
