"""Paper-style static figures of result bundles: matplotlib Figures with seaborn styling.

Every number drawn comes from the viz tables (`guess_counts`, `group_summary`,
`round_trajectories`, `tokens_per_response`, `compare_bundles`), which aggregate a round once
(per category and whole-number guess), so a figure of a million agents draws a few hundred bars
or boxes, never the agents. Figures are built with the object API (`matplotlib.figure.Figure`,
no pyplot): nothing is registered globally, so a long notebook session does not collect them,
and they render with Agg anywhere. Each shows itself in Jupyter as a PNG without pyplot;
`workbench.viz.figure_files.save_figure` writes it into a bundle's figures/.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from workbench.game.rules import equilibrium
from workbench.results import Bundle
from workbench.viz.answers import BundleLike, as_bundle, resolve_round
from workbench.viz.distributions import (
    compare_bundles,
    group_summary,
    guess_counts,
    round_trajectories,
    tokens_per_response,
)
from workbench.viz.figure_files import DISPLAY_DPI, figure_bytes

KINDS: tuple[str, ...] = ("bars", "heatmap", "quantiles", "means")
"""The ways `distribution` draws guesses by category."""

MAX_PANELS = 20
"""The most categories `distribution(kind="bars")` draws (one panel each); a heatmap takes more."""

WIDTH = 7.0
"""Figure width in inches (a page's text width); heights follow the number of rows."""

DATA_COLOR = "#0173b2"
REFERENCE_COLORS: tuple[str, ...] = ("#de8f05", "#cc78bc", "#949494", "#ca9161", "#56b4e9")
REFERENCE_MARKERS: tuple[str, ...] = ("D", "s", "^", "v", "P")

HEATMAP_COLORS: tuple[str, ...] = ("#d4e6f4", "#6baed6", "#08306b")
"""Heatmap colours from the fewest to the most answers (light enough that marks stay seen);
cells where nobody guessed are white."""

MARKS: dict[str, dict[str, Any]] = {
    "target": {"color": "#d55e00", "linestyle": "-", "linewidth": 1.8},
    "equilibrium": {"color": "0.15", "linestyle": "--", "linewidth": 1.2},
    "winning": {"color": "#029e73", "linestyle": "-.", "linewidth": 1.8},
}
"""Line styles of the game's numbers, the same in every figure."""

LABEL_WIDTH = 32
"""Category labels are wrapped at this many characters (long occupation names stay readable)."""

_STYLE: dict[str, Any] = {
    **sns.axes_style("whitegrid"),
    **sns.plotting_context("paper", font_scale=1.15),
    # matplotlib's own font: the same glyphs, hence the same bytes, on every machine
    "font.sans-serif": ["DejaVu Sans"],
    "axes.titlelocation": "left",
    "axes.titleweight": "bold",
    "legend.frameon": True,
    "legend.framealpha": 0.9,
    "legend.edgecolor": "0.8",
}
"""rcParams of every figure: seaborn's whitegrid style at paper scale."""

P = ParamSpec("P")
R = TypeVar("R")


class PaperFigure(Figure):
    """A matplotlib Figure drawn in the workbench's style, shown in Jupyter as a PNG.

    The style is applied at draw time too (ticks and layout are made when drawn), so a figure
    looks the same in a notebook, in a PNG and in a PDF, whatever the session's rcParams.
    """

    def draw(self, renderer: Any) -> None:
        with mpl.rc_context(_STYLE):
            super().draw(renderer)

    def _repr_png_(self) -> bytes:
        """IPython's display hook: the figure as PNG, no pyplot or inline backend needed."""
        return figure_bytes(self, "png", dpi=DISPLAY_DPI)


def _styled(build: Callable[P, R]) -> Callable[P, R]:
    """Run a figure builder under the workbench's rcParams, leaving the session's untouched."""

    @functools.wraps(build)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with mpl.rc_context(_STYLE):
            return build(*args, **kwargs)

    return wrapper


def _new_figure(height: float, width: float = WIDTH) -> PaperFigure:
    """An empty figure with constrained layout (labels never overlap), white background."""
    return PaperFigure(figsize=(width, height), layout="constrained", dpi=DISPLAY_DPI)


# --------------------------------------------------------------------------- game marks


@dataclass(frozen=True)
class GameMarks:
    """A round's numbers that figures mark: from rounds.parquet and the game's equilibrium."""

    round: int
    n: int
    n_valid: int
    mean: float
    target: float
    winning_guess: float
    equilibrium: float


def _fmt(value: float) -> str:
    """A number for a label: two decimals at most, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def round_marks(bundle: BundleLike, round: int | None = None) -> GameMarks:
    """The marks of one round (the last when None): its target, winning number, equilibrium.

    ValueError naming the rounds there are when `round` was not played.
    """
    opened = as_bundle(bundle)
    number = resolve_round(opened, round)
    rounds = round_trajectories(opened)
    row = rounds[rounds["round"] == number].iloc[0]
    return GameMarks(
        round=number,
        n=int(row["n"]),
        n_valid=int(row["n_valid"]),
        mean=float(row["mean"]),
        target=float(row["target"]),
        winning_guess=float(row["winning_guess"]),
        equilibrium=float(equilibrium(opened.config.game)),
    )


def _mark_lines(ax: Axes, marks: GameMarks, *, labelled: bool = True, behind: bool = False) -> None:
    """The target, winning number and equilibrium as vertical lines across `ax` (nan ones left
    out), over the data or, `behind`, under it (boxes and intervals stay readable)."""
    for key, value, name in (
        ("target", marks.target, "target"),
        ("winning", marks.winning_guess, "winning number"),
        ("equilibrium", marks.equilibrium, "equilibrium"),
    ):
        if np.isfinite(value):
            label = f"{name} {_fmt(value)}" if labelled else "_nolegend_"
            ax.axvline(value, label=label, zorder=1.5 if behind else 3, **MARKS[key])


# --------------------------------------------------------------------------- references


def _reference(
    reference: pd.DataFrame | None, key: str, optional: Sequence[str]
) -> pd.DataFrame | None:
    """`reference` checked: a DataFrame with `key` and `mean` (numbers), `optional` columns
    filled (label "reference", low/high nan). ValueError naming the columns when it is not."""
    if reference is None:
        return None
    wanted = f"columns {key!r} and 'mean' (optional: {', '.join(map(repr, optional))})"
    if not isinstance(reference, pd.DataFrame):
        raise ValueError(
            f"reference: expected a pandas DataFrame with {wanted}, got {type(reference).__name__}"
        )
    missing = [c for c in (key, "mean") if c not in reference.columns]
    if missing:
        raise ValueError(
            f"reference: missing column(s) {missing}; give {wanted}, got {list(reference.columns)}"
        )
    frame = pd.DataFrame({key: reference[key].astype(str) if key != "round" else reference[key]})
    for name in ("mean", *(c for c in ("low", "high") if c in optional)):
        values = reference[name] if name in reference.columns else np.nan
        try:
            frame[name] = pd.to_numeric(pd.Series(values, index=reference.index))
        except (TypeError, ValueError):
            raise ValueError(f"reference: column {name!r} must hold numbers") from None
    if key == "round":
        try:
            frame["round"] = pd.to_numeric(reference["round"])
        except (TypeError, ValueError):
            raise ValueError("reference: column 'round' must hold round numbers") from None
    labels = reference["label"] if "label" in reference.columns else "reference"
    frame["label"] = pd.Series(labels, index=reference.index).fillna("reference").astype(str)
    return frame.reset_index(drop=True)


def _reference_styles(reference: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """A marker and colour per reference label, in order of appearance."""
    labels = list(dict.fromkeys(reference["label"]))
    return {
        label: {
            "marker": REFERENCE_MARKERS[i % len(REFERENCE_MARKERS)],
            "color": REFERENCE_COLORS[i % len(REFERENCE_COLORS)],
        }
        for i, label in enumerate(labels)
    }


def _reference_points(
    ax: Axes, reference: pd.DataFrame | None, key: str, rows: list[str], offset: float = 0.28
) -> list[str]:
    """Reference means as markers (with low-high bars) on categorical rows of `ax`.

    A reference whose `key` is one of `rows` is drawn just below that row; the others get rows
    of their own after `rows`. Returns every row's name (rows, then the reference-only ones).
    """
    if reference is None or reference.empty:
        return rows
    names = list(rows)
    styles = _reference_styles(reference)
    seen: set[str] = set()
    for item in reference.itertuples(index=False):
        name = str(getattr(item, key))
        if name in rows:
            y = rows.index(name) + offset
        else:
            if name not in names:
                names.append(name)
            y = names.index(name)
        low, high = item.low, item.high
        xerr = None
        if np.isfinite(low) and np.isfinite(high):
            xerr = [[item.mean - low], [high - item.mean]]
        label = item.label if item.label not in seen else "_nolegend_"
        seen.add(item.label)
        style = styles[item.label]
        ax.errorbar(
            [item.mean], [y], xerr=xerr, fmt=style["marker"], color=style["color"],
            markersize=6, capsize=3, linewidth=1.2, label=label, zorder=4,
        )  # fmt: skip
    if len(names) > len(rows):
        ax.axhline(len(rows) - 0.5, color="0.6", linewidth=0.8, zorder=1)
    return names


def _reference_lines(
    ax: Axes,
    reference: pd.DataFrame | None,
    category: str | None,
    others: set[str],
    *,
    labelled: bool = True,
) -> None:
    """Reference means as vertical lines: those of `category` (None: every category) and those
    of `others`, the categories the bundle does not have (drawn in every panel)."""
    if reference is None:
        return
    for i, item in enumerate(reference.itertuples(index=False)):
        if category is None or item.category == category or item.category in others:
            label = f"{item.label}: {item.category} {_fmt(item.mean)}"
            ax.axvline(
                item.mean, color=REFERENCE_COLORS[i % len(REFERENCE_COLORS)],
                linestyle=(0, (1, 1)), linewidth=1.8, zorder=3,
                label=label if labelled else "_nolegend_",
            )  # fmt: skip


# --------------------------------------------------------------------------- categories


def _label(category: Any, n_valid: float | None = None) -> str:
    """A category's axis label, wrapped, with its number of valid answers."""
    text = str(category) if n_valid is None else f"{category} (n={int(n_valid)})"
    return textwrap.fill(text, LABEL_WIDTH)


def _rows_axis(ax: Axes, labels: list[str]) -> None:
    """Categorical rows, first at the top: ticks, limits and no horizontal grid."""
    positions = np.arange(len(labels))
    ax.set_yticks(positions, labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.grid(False, axis="y")


def _no_answers(ax: Axes, y: float) -> None:
    """A row's note that its category has no valid answer."""
    ax.text(0.02, y, "no valid answers", transform=ax.get_yaxis_transform(), va="center",
            color="0.45", fontstyle="italic")  # fmt: skip


def _game_xlim(ax: Axes, bundle: Bundle) -> None:
    """The x-axis over the game's range of guesses (whole-number bins up to high + 1)."""
    game = bundle.config.game
    ax.set_xlim(game.low, np.floor(game.high) + 1)


def _title(fig: Figure, text: str, bundle: Bundle | None = None) -> None:
    """The figure's title, flush left and wrapped, naming the bundle's run id."""
    full = text if bundle is None else f"{text} · {bundle.run_id}"
    fig.suptitle(textwrap.fill(full, 64), x=0.01, ha="left", fontweight="bold",
                 fontsize="large")  # fmt: skip


def _legend(fig: Figure, axes: Iterable[Axes], *, loc: str = "outside lower center") -> None:
    """One legend for the figure (each label once), in as many columns as its labels fit."""
    handles, labels = _legend_entries(axes)
    if not labels:
        return
    longest = max(len(label) for label in labels)
    ncols = 1 if loc.endswith("right center") or longest > 44 else 2 if longest > 24 else 3
    fig.legend(handles, labels, loc=loc, ncols=min(ncols, len(labels)))


# --------------------------------------------------------------------------- histogram


@_styled
def histogram(bundle: BundleLike, round: int | None = None) -> Figure:
    """One round's guesses (the last when None) as a histogram of whole-number bins, with the
    round's target, winning number and the game's equilibrium marked."""
    opened = as_bundle(bundle)
    counts = guess_counts(opened, round)
    marks = round_marks(opened, counts.attrs["round"])
    fig = _new_figure(3.8)
    ax = fig.add_subplot()
    ax.bar(
        counts["guess"], counts["count"], width=1.0, align="edge", color=DATA_COLOR,
        linewidth=0.3, label=f"guesses ({marks.n_valid} valid of {marks.n})",
    )  # fmt: skip
    _mark_lines(ax, marks)
    _game_xlim(ax, opened)
    ax.set_xlabel("guess (whole-number bins: bar g holds guesses in [g, g + 1))")
    ax.set_ylabel("agents")
    _title(fig, f"Round {marks.round} guesses", opened)
    ax.legend(loc="best")
    return fig


# --------------------------------------------------------------------------- distribution


@_styled
def distribution(
    bundle: BundleLike,
    by: str,
    round: int | None = None,
    kind: str = "bars",
    reference: pd.DataFrame | None = None,
) -> Figure:
    """One round's guesses (the last when None) by persona column `by`, drawn as `kind`:

    - "bars": one histogram panel per category (share of its valid answers per whole number);
    - "heatmap": category x whole-number guess, coloured by that share;
    - "quantiles": boxes of the quartiles and median, whiskers min to max, the mean a dot;
    - "means": the mean with its 95% t interval.

    The round's target, winning number and equilibrium are marked. `reference` (a DataFrame
    with `category` and `mean`, optional `label`, `low`, `high`) adds reference means: on the
    row (or panel) of the category of that name, else on a row (or line) of their own.
    """
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    if by is None:
        raise ValueError("by: give a persona column (e.g. 'education'); histogram() draws all")
    opened = as_bundle(bundle)
    marks = round_marks(opened, round)
    ref = _reference(reference, "category", ("label", "low", "high"))
    draw = {"bars": _bars, "heatmap": _heatmap, "quantiles": _quantiles, "means": _means}[kind]
    fig = draw(opened, by, marks, ref)
    return fig


def _bars(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    counts = guess_counts(bundle, marks.round, by)
    categories = list(counts["category"].cat.categories)
    if len(categories) > MAX_PANELS:
        raise ValueError(
            f"kind: 'bars' draws one panel per category and {by!r} has {len(categories)} "
            f"(more than {MAX_PANELS}); use kind='heatmap', 'quantiles' or 'means'"
        )
    groups = dict(list(counts.groupby("category", observed=False)))
    fig = _new_figure(1.0 + 1.05 * len(categories))
    axes = fig.subplots(len(categories), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    others = set() if ref is None else set(ref["category"]) - {str(c) for c in categories}
    for i, (ax, category) in enumerate(zip(axes, categories, strict=True)):
        rows = groups[category]
        ax.bar(rows["guess"], rows["share"], width=1.0, align="edge", color=DATA_COLOR,
               linewidth=0.3)  # fmt: skip
        _mark_lines(ax, marks, labelled=i == 0)
        _reference_lines(ax, ref, str(category), others)
        ax.set_title(f"{category} (n={rows['count'].sum()})", fontsize="medium",
                     fontweight="normal", pad=3)  # fmt: skip
        if rows.empty:
            ax.text(0.5, 0.5, "no valid answers", transform=ax.transAxes, ha="center",
                    color="0.45", fontstyle="italic")  # fmt: skip
    _game_xlim(axes[-1], bundle)
    axes[-1].set_xlabel("guess (whole-number bins)")
    fig.supylabel("share of the category's valid answers", fontsize="medium")
    _title(fig, f"Round {marks.round} guesses by {by}", bundle)
    _legend(fig, axes)
    return fig


def _legend_entries(axes: Iterable[Axes]) -> tuple[list[Any], list[str]]:
    """The labelled artists of several axes, each label once (for one figure legend)."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def _heatmap(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    counts = guess_counts(bundle, marks.round, by)
    categories = list(counts["category"].cat.categories)
    n_valid = counts.groupby("category", observed=False)["count"].sum()
    game = bundle.config.game
    low, high = int(np.floor(game.low)), int(np.floor(game.high))
    if counts.size and high - low > 2000:  # a huge range: the guesses' own span
        low, high = int(counts["guess"].min()), int(counts["guess"].max())
    shares = np.zeros((len(categories), high - low + 1))
    shares[counts["category"].cat.codes.to_numpy(), counts["guess"].to_numpy() - low] = counts[
        "share"
    ].to_numpy()
    fig = _new_figure(1.6 + 0.42 * len(categories))
    ax = fig.add_subplot()
    cmap = sns.blend_palette(HEATMAP_COLORS, as_cmap=True).with_extremes(bad="white")
    mesh = ax.pcolormesh(
        np.arange(low, high + 2), np.arange(len(categories) + 1) - 0.5,
        np.ma.masked_equal(shares, 0.0), cmap=cmap, vmin=0, shading="flat",
    )  # fmt: skip
    fig.colorbar(mesh, ax=ax, label="share of the category's valid answers", pad=0.01)
    _mark_lines(ax, marks)
    _reference_lines(ax, ref, None, set())
    _rows_axis(ax, [_label(c, n_valid[c]) for c in categories])
    ax.set_xlim(low, high + 1)
    ax.grid(False)
    ax.set_xlabel("guess (whole-number bins; white: nobody)")
    _title(fig, f"Round {marks.round} guesses by {by}", bundle)
    _legend(fig, [ax])
    return fig


def _boxes(ax: Axes, summary: pd.DataFrame, *, means: bool) -> None:
    """Quantile boxes on rows 0..n-1 drawn from `group_summary` rows (quartiles, median; min
    and max as whiskers; the mean a dot when `means`), never from raw guesses; a row without
    valid answers gets a note instead."""
    stats, positions = [], []
    for i, row in enumerate(summary.itertuples(index=False)):
        if row.n_valid == 0:
            _no_answers(ax, i)
            continue
        positions.append(i)
        stats.append({
            "med": row.median, "q1": row.q1, "q3": row.q3, "whislo": row.min,
            "whishi": row.max, "mean": row.mean, "fliers": [],
        })  # fmt: skip
    if not stats:
        return
    edge = DATA_COLOR if means else "0.5"
    parts = ax.bxp(
        stats, positions=positions, orientation="horizontal", widths=0.5, showmeans=means,
        showfliers=False, patch_artist=True, manage_ticks=False,
        boxprops={"facecolor": "#a6cee3" if means else "#dbe9f6", "edgecolor": edge},
        whiskerprops={"color": edge}, capprops={"color": edge},
        medianprops={"color": edge, "linewidth": 2},
        meanprops={"marker": "o", "markerfacecolor": "white", "markeredgecolor": DATA_COLOR},
    )  # fmt: skip
    parts["boxes"][0].set_label("quartiles and median (box)")
    parts["whiskers"][0].set_label("min to max (whiskers)")
    if means:
        parts["means"][0].set_label("mean")


def _intervals(ax: Axes, summary: pd.DataFrame, size: float) -> None:
    """`group_summary`'s means with their 95% t intervals on rows 0..n-1."""
    mean = summary["mean"].to_numpy(dtype=float)
    err = np.stack([mean - summary["ci_low"], summary["ci_high"] - mean])
    ax.errorbar(
        mean, np.arange(len(mean)), xerr=err, fmt="o", color=DATA_COLOR, capsize=4,
        markersize=size, linewidth=1.6, label="mean with 95% interval", zorder=5,
    )  # fmt: skip


def _quantiles(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    summary = group_summary(bundle, marks.round, by)
    rows = [str(c) for c in summary["category"]]
    fig = _new_figure(1.9 + 0.5 * (len(rows) + (0 if ref is None else len(ref))))
    ax = fig.add_subplot()
    _boxes(ax, summary, means=True)
    _mark_lines(ax, marks, behind=True)
    names = _reference_points(ax, ref, "category", rows)
    labels = [_label(c, n) for c, n in zip(rows, summary["n_valid"], strict=True)]
    _rows_axis(ax, labels + [_label(n) for n in names[len(rows) :]])
    _game_xlim(ax, bundle)
    ax.set_xlabel("guess")
    _title(fig, f"Round {marks.round} guesses by {by}", bundle)
    _legend(fig, [ax])
    return fig


def _means(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    summary = group_summary(bundle, marks.round, by)
    rows = [str(c) for c in summary["category"]]
    fig = _new_figure(1.9 + 0.45 * (len(rows) + (0 if ref is None else len(ref))))
    ax = fig.add_subplot()
    _intervals(ax, summary, size=7)
    for i in np.flatnonzero(summary["n_valid"].to_numpy() == 0):
        _no_answers(ax, i)
    _mark_lines(ax, marks, behind=True)
    names = _reference_points(ax, ref, "category", rows)
    labels = [_label(c, n) for c, n in zip(rows, summary["n_valid"], strict=True)]
    _rows_axis(ax, labels + [_label(n) for n in names[len(rows) :]])
    ax.set_xlabel("mean guess (95% t interval)")
    _title(fig, f"Round {marks.round} mean guess by {by}", bundle)
    _legend(fig, [ax])
    return fig


# --------------------------------------------------------------------------- trajectories

_TRAJECTORY_STATS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("mean", "mean", {"color": DATA_COLOR, "marker": "o", "linestyle": "-"}),
    ("median", "median", {"color": "#56b4e9", "marker": "s", "linestyle": "--"}),
    ("target", "target", {**MARKS["target"], "marker": "^"}),
    ("winning_guess", "winning number", {**MARKS["winning"], "marker": "*", "markersize": 9}),
)
"""round_trajectories' columns drawn by `trajectories`: column, name, line style."""


@_styled
def trajectories(
    bundle: BundleLike, by: str | None = None, reference: pd.DataFrame | None = None
) -> Figure:
    """The mean, median, target and winning number per round: one panel overall, or (with
    `by`) one panel per statistic with a line per category, each scored as its own group.

    The game's equilibrium is a dashed line. `reference` (a DataFrame with `round` and `mean`,
    optional `label`) adds reference means per round, e.g. the paper's.
    """
    opened = as_bundle(bundle)
    table = round_trajectories(opened, by)
    ref = _reference(reference, "round", ("label",))
    eq = float(equilibrium(opened.config.game))
    rounds = sorted(int(r) for r in table["round"].unique())
    if by is None:
        fig = _new_figure(4.0)
        ax = fig.add_subplot()
        for column, name, style in _TRAJECTORY_STATS:
            ax.plot(table["round"], table[column], label=name, **style)
        axes = [ax]
        ax.set_ylabel("guess")
    else:
        fig = _new_figure(6.2)
        axes = list(fig.subplots(2, 2, sharex=True, sharey=True).flat)
        categories = list(dict.fromkeys(table["category"]))
        palette = _palette(len(categories))
        for ax, (column, name, _) in zip(axes, _TRAJECTORY_STATS, strict=True):
            for color, category in zip(palette, categories, strict=True):
                rows = table[table["category"] == category]
                ax.plot(rows["round"], rows[column], marker="o", color=color,
                        label=_label(category))  # fmt: skip
            ax.set_title(name, fontsize="medium")
        fig.supylabel("guess", fontsize="medium")
    for ax in axes:
        if np.isfinite(eq):
            ax.axhline(eq, label=f"equilibrium {_fmt(eq)}", **MARKS["equilibrium"])
        ax.set_xticks(rounds)
    if ref is not None:
        styles = _reference_styles(ref)
        for label, rows in ref.groupby("label", sort=False):
            axes[0].plot(rows["round"], rows["mean"], linestyle="none", markersize=7,
                         label=f"{label} (mean)", **styles[str(label)])  # fmt: skip
    for ax in axes[-2:] if by is not None else axes:
        ax.set_xlabel("round")
    _title(fig, "Guesses per round" + ("" if by is None else f" by {by}"), opened)
    if by is None:
        axes[0].legend(loc="best")
    else:
        _legend(fig, axes, loc="outside right center")
    return fig


def _palette(n: int) -> list[Any]:
    """n distinguishable colours: seaborn's colour-blind palette, husl past ten."""
    return list(sns.color_palette("colorblind" if n <= 10 else "husl", n))


# --------------------------------------------------------------------------- several bundles

Bundles = BundleLike | Sequence[BundleLike] | Mapping[str, BundleLike]
"""One bundle, several (labelled by run id), or a mapping {label: bundle}."""


def labelled(bundles: Bundles) -> dict[str, Bundle]:
    """{label: opened bundle}: a mapping's own labels, else run ids (`#2` after a repeat), as
    `workbench.experiment.compare` labels them. ValueError when there is no bundle."""
    if isinstance(bundles, Bundle | str) or hasattr(bundles, "__fspath__"):
        bundles = [bundles]  # type: ignore[list-item]
    items = list(bundles.items()) if isinstance(bundles, Mapping) else [(None, b) for b in bundles]
    if not items:
        raise ValueError("bundles: give one or more bundles (or a mapping label -> bundle)")
    out: dict[str, Bundle] = {}
    for label, given in items:
        bundle = as_bundle(given)
        name = str(label) if label is not None else bundle.run_id
        number = 2
        while name in out:
            name, number = f"{label or bundle.run_id}#{number}", number + 1
        out[name] = bundle
    return out


@_styled
def compare(
    bundles: Bundles, round: int | None = None, reference: pd.DataFrame | None = None
) -> Figure:
    """Several bundles side by side, one row each: a round's quartile box (whiskers min to max),
    mean with its 95% interval, target and winning number (each bundle's last round when
    `round` is None); beside it the mean per round when any bundle played more than one.

    `reference` (a DataFrame with `label` and `mean`, optional `low`, `high`) adds reference
    means: on the row of the bundle of that label, else on a row of its own.
    """
    opened = labelled(bundles)
    labels = list(opened)
    ref = _reference(reference, "label", ("low", "high"))
    if ref is not None:
        ref = ref.rename(columns={"label": "row"}).assign(label="reference")
    summaries = [group_summary(b, round) for b in opened.values()]
    table = compare_bundles(list(opened.values()), labels)
    chosen = [s.attrs["round"] for s in summaries]
    several = table.groupby("label")["round"].nunique().max() > 1
    n_rows = len(labels) + (0 if ref is None else len(ref))
    fig = _new_figure(1.9 + 0.5 * n_rows)
    ax, trend = fig.subplots(1, 2, width_ratios=[3, 2]) if several else (fig.add_subplot(), None)
    both = pd.concat(summaries, ignore_index=True)
    _boxes(ax, both, means=False)
    _intervals(ax, both, size=6)
    picked = pd.concat(
        [table[(table["label"] == name) & (table["round"] == r)]
         for name, r in zip(labels, chosen, strict=True)]
    )  # fmt: skip
    y = np.arange(len(labels))
    ax.plot(
        picked["target"],
        y,
        linestyle="none",
        marker="|",
        markersize=16,
        markeredgewidth=2.5,
        color=MARKS["target"]["color"],
        label="target",
        zorder=6,
    )
    ax.plot(picked["winning_guess"], y, linestyle="none", marker="x", markersize=8,
            markeredgewidth=2, color=MARKS["winning"]["color"], label="winning number",
            zorder=6)  # fmt: skip
    equilibria = {float(equilibrium(b.config.game)) for b in opened.values()}
    if len(equilibria) == 1 and np.isfinite(eq := equilibria.pop()):
        ax.axvline(eq, label=f"equilibrium {_fmt(eq)}", **MARKS["equilibrium"])
    names = _reference_points(ax, ref, "row", labels)
    rows = [_label(f"{name} (round {r})") for name, r in zip(labels, chosen, strict=True)]
    _rows_axis(ax, rows + [_label(n) for n in names[len(labels) :]])
    ax.set_xlabel("guess")
    same_round = len(set(chosen)) == 1
    ax.set_title(f"round {chosen[0]}" if same_round else "each bundle's last round")
    if trend is not None:
        palette = _palette(len(labels))
        for color, name in zip(palette, labels, strict=True):
            rows_of = table[table["label"] == name]
            trend.plot(rows_of["round"], rows_of["mean"], marker="o", color=color,
                       label=textwrap.shorten(name, LABEL_WIDTH))  # fmt: skip
        trend.set_xticks(sorted(table["round"].unique()))
        trend.set_xlabel("round")
        trend.set_ylabel("mean guess")
        trend.set_title("mean per round")
        trend.legend(loc="best", fontsize="small")
    _title(fig, "Bundles compared")
    _legend(fig, [ax])
    return fig


@_styled
def tokens(bundles: Bundles) -> Figure:
    """Mean completion tokens per response and prompt tokens per call, per bundle and round
    (`tokens_per_response`); behavioural policies spend none (0)."""
    opened = labelled(bundles)
    labels = list(opened)
    tables = {name: tokens_per_response(b) for name, b in opened.items()}
    rounds = sorted({int(r) for t in tables.values() for r in t["round"]})
    fig = _new_figure(1.6 + 0.32 * len(labels) * max(len(rounds), 2) ** 0.5 + 0.3)
    axes = fig.subplots(1, 2, sharey=True)
    height = 0.8 / max(len(rounds), 1)
    palette = _palette(len(rounds)) if len(rounds) > 1 else [DATA_COLOR]
    for ax, column, title in (
        (axes[0], "completion_tokens_mean", "completion tokens per response"),
        (axes[1], "prompt_tokens_mean", "prompt tokens per call"),
    ):
        for j, (number, color) in enumerate(zip(rounds, palette, strict=True)):
            values = [_token_value(tables[name], number, column) for name in labels]
            y = np.arange(len(labels)) - 0.4 + height * (j + 0.5)
            bars = ax.barh(y, np.nan_to_num(values), height=height, color=color,
                           label=f"round {number}")  # fmt: skip
            if len(labels) * len(rounds) <= 12:
                ax.bar_label(
                    bars,
                    labels=[_fmt(v) if np.isfinite(v) else "no counts" for v in values],
                    padding=2,
                    fontsize="small",
                )
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("mean tokens")
        ax.margins(x=0.15)
        ax.grid(False, axis="y")
    _rows_axis(axes[0], [_label(n) for n in labels])
    _title(fig, "Tokens per response")
    if len(rounds) > 1:
        fig.legend(*_legend_entries(axes[:1]), loc="outside lower center",
                   ncols=min(len(rounds), 6))  # fmt: skip
    return fig


def _token_value(table: pd.DataFrame, number: int, column: str) -> float:
    """One round's value of a tokens_per_response column (nan when the bundle lacks it)."""
    rows = table[table["round"] == number]
    return float(rows[column].iloc[0]) if len(rows) else float("nan")
