"""The parts the static figures are drawn from: style, the game's marks, reference markers,
categorical rows, quantile boxes and intervals, legends and titles.

`workbench.viz.figures` composes them; every number drawn comes from the viz tables passed in.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Callable, Iterable, Sequence
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
from workbench.viz import colours
from workbench.viz.answers import BundleLike, as_bundle, resolve_round
from workbench.viz.distributions import round_trajectories
from workbench.viz.figure_files import DISPLAY_DPI, figure_bytes

WIDTH = 7.0
"""Figure width in inches (a page's text width); heights follow the number of rows."""

DATA_COLOR = colours.GUESSES
"""What the agents answered (`viz.colours`, like every colour here)."""
REFERENCE_COLORS: tuple[str, ...] = colours.REFERENCES
REFERENCE_MARKERS: tuple[str, ...] = ("D", "s", "^", "v", "P")

HEATMAP_COLORS: tuple[str, ...] = colours.SHARES
"""Heatmap colours from the fewest to the most answers (light enough that marks stay seen);
cells where nobody guessed are white."""

MARKS: dict[str, dict[str, Any]] = {
    "target": {"color": colours.TARGET, "linestyle": "-", "linewidth": 1.8},
    "equilibrium": {"color": colours.EQUILIBRIUM, "linestyle": "--", "linewidth": 1.2},
    "winning": {"color": colours.WINNING, "linestyle": "-.", "linewidth": 1.8},
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


def styled(build: Callable[P, R]) -> Callable[P, R]:
    """Run a figure builder under the workbench's rcParams, leaving the session's untouched."""

    @functools.wraps(build)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with mpl.rc_context(_STYLE):
            return build(*args, **kwargs)

    return wrapper


def new_figure(height: float, width: float = WIDTH) -> PaperFigure:
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


def fmt(value: float) -> str:
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


def mark_lines(ax: Axes, marks: GameMarks, *, labelled: bool = True, behind: bool = False) -> None:
    """The target, winning number and equilibrium as vertical lines across `ax` (nan ones left
    out), over the data or, `behind`, under it (boxes and intervals stay readable)."""
    for key, value, name in (
        ("target", marks.target, "target"),
        ("winning", marks.winning_guess, "winning number"),
        ("equilibrium", marks.equilibrium, "equilibrium"),
    ):
        if np.isfinite(value):
            label = f"{name} {fmt(value)}" if labelled else "_nolegend_"
            ax.axvline(value, label=label, zorder=1.5 if behind else 3, **MARKS[key])


# --------------------------------------------------------------------------- references


def parse_reference(
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


def reference_styles(reference: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """A marker and colour per reference label, in order of appearance."""
    labels = list(dict.fromkeys(reference["label"]))
    return {
        label: {
            "marker": REFERENCE_MARKERS[i % len(REFERENCE_MARKERS)],
            "color": REFERENCE_COLORS[i % len(REFERENCE_COLORS)],
        }
        for i, label in enumerate(labels)
    }


def reference_points(
    ax: Axes, reference: pd.DataFrame | None, key: str, rows: list[str], offset: float = 0.28
) -> list[str]:
    """Reference means as markers (with low-high bars) on categorical rows of `ax`.

    A reference whose `key` is one of `rows` is drawn just below that row; the others get rows
    of their own after `rows`. Returns every row's name (rows, then the reference-only ones).
    """
    if reference is None or reference.empty:
        return rows
    names = list(rows)
    styles = reference_styles(reference)
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
            [item.mean],
            [y],
            xerr=xerr,
            fmt=style["marker"],
            color=style["color"],
            markersize=6,
            capsize=3,
            linewidth=1.2,
            label=label,
            zorder=6,
        )
    if len(names) > len(rows):
        ax.axhline(len(rows) - 0.5, color="0.6", linewidth=0.8, zorder=1)
    return names


def reference_lines(
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
            label = f"{item.label}: {item.category} {fmt(item.mean)}"
            ax.axvline(
                item.mean,
                color=REFERENCE_COLORS[i % len(REFERENCE_COLORS)],
                linestyle=(0, (1, 1)),
                linewidth=1.8,
                zorder=3,
                label=label if labelled else "_nolegend_",
            )


# --------------------------------------------------------------------------- categories


def label(category: Any, n_valid: float | None = None, n: float | None = None) -> str:
    """A category's axis label, wrapped: its number of valid answers, and of invalid ones when
    `n` (all its answers) is given and there are some."""
    text = str(category)
    if n_valid is not None:
        invalid = 0 if n is None else int(n) - int(n_valid)
        text += f" (n={int(n_valid)}" + (f", {invalid} invalid)" if invalid else ")")
    return textwrap.fill(text, LABEL_WIDTH)


def rows_axis(ax: Axes, labels: list[str]) -> None:
    """Categorical rows, first at the top: ticks, limits and no horizontal grid."""
    positions = np.arange(len(labels))
    ax.set_yticks(positions, labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.grid(False, axis="y")


def no_answers(ax: Axes, y: float) -> None:
    """A row's note that its category has no valid answer."""
    ax.text(
        0.02,
        y,
        "no valid answers",
        transform=ax.get_yaxis_transform(),
        va="center",
        color="0.4",
        fontstyle="italic",
        zorder=6,
        bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5},
    )


def game_xlim(ax: Axes, bundle: Bundle) -> None:
    """The x-axis over the game's range of guesses (whole-number bins up to high + 1)."""
    game = bundle.config.game
    ax.set_xlim(game.low, np.floor(game.high) + 1)


RUN_ID_WIDTH = 56
"""Most characters of a run id in a title: a sweep cell's long id keeps its start and hash."""


def short_run_id(run_id: str, width: int = RUN_ID_WIDTH) -> str:
    """`run_id`, or its start and its last 17 characters (the hash) joined by an ellipsis."""
    return run_id if len(run_id) <= width else f"{run_id[: width - 18]}…{run_id[-17:]}"


def title(fig: Figure, text: str, bundle: Bundle | None = None) -> None:
    """The figure's title, flush left and wrapped, then the bundle's run id on a line of its
    own (shortened in the middle when long), so a sweep cell's id never runs off the figure."""
    full = textwrap.fill(text, 64)
    if bundle is not None:
        full = f"{full}\n{short_run_id(bundle.run_id)}"
    fig.suptitle(full, x=0.01, ha="left", fontweight="bold", fontsize="large")


def legend(fig: Figure, axes: Iterable[Axes], *, loc: str = "outside lower center") -> None:
    """One legend for the figure (each label once), in as many columns as its labels fit."""
    handles, labels = legend_entries(axes)
    if not labels:
        return
    longest = max(len(label) for label in labels)
    ncols = 1 if loc.endswith("right center") or longest > 44 else 2 if longest > 24 else 3
    fig.legend(handles, labels, loc=loc, ncols=min(ncols, len(labels)))


def legend_entries(axes: Iterable[Axes]) -> tuple[list[Any], list[str]]:
    """The labelled artists of several axes, each label once (for one figure legend)."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def boxes(ax: Axes, summary: pd.DataFrame, *, means: bool) -> None:
    """Quantile boxes on rows 0..n-1 drawn from `group_summary` rows (quartiles, median; min
    and max as whiskers; the mean a dot when `means`), never from raw guesses; a row without
    valid answers gets a note instead."""
    stats, positions = [], []
    for i, row in enumerate(summary.itertuples(index=False)):
        if row.n_valid == 0:
            no_answers(ax, i)
            continue
        positions.append(i)
        stats.append(
            {
                "med": row.median,
                "q1": row.q1,
                "q3": row.q3,
                "whislo": row.min,
                "whishi": row.max,
                "mean": row.mean,
                "fliers": [],
            }
        )
    if not stats:
        return
    edge = DATA_COLOR if means else "0.5"
    parts = ax.bxp(
        stats,
        positions=positions,
        orientation="horizontal",
        widths=0.5,
        showmeans=means,
        showfliers=False,
        patch_artist=True,
        manage_ticks=False,
        boxprops={"facecolor": "#a6cee3" if means else "#dbe9f6", "edgecolor": edge},
        whiskerprops={"color": edge},
        capprops={"color": edge},
        medianprops={"color": edge, "linewidth": 2},
        meanprops={"marker": "o", "markerfacecolor": "white", "markeredgecolor": DATA_COLOR},
    )
    parts["boxes"][0].set_label("quartiles and median (box)")
    parts["whiskers"][0].set_label("min to max (whiskers)")
    if means:
        parts["means"][0].set_label("mean")


def intervals(ax: Axes, summary: pd.DataFrame, size: float, offset: float = 0.0) -> None:
    """`group_summary`'s means with their 95% t intervals on rows 0..n-1 (shifted by `offset`,
    below a row's box)."""
    mean = summary["mean"].to_numpy(dtype=float)
    err = np.stack([mean - summary["ci_low"], summary["ci_high"] - mean])
    ax.errorbar(
        mean,
        np.arange(len(mean)) + offset,
        xerr=err,
        fmt="o",
        color=DATA_COLOR,
        capsize=4,
        markersize=size,
        linewidth=1.6,
        label="mean with 95% interval",
        zorder=5,
    )


def palette(n: int) -> list[Any]:
    """n distinguishable colours for categories and bundles: `viz.colours.CATEGORIES`, husl
    past them."""
    if n <= len(colours.CATEGORIES):
        return list(colours.CATEGORIES[:n])
    return list(sns.color_palette("husl", n))
