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

import textwrap
from typing import Any

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from workbench.game.rules import equilibrium
from workbench.results import Bundle
from workbench.viz import colours
from workbench.viz import figure_parts as fp
from workbench.viz.answers import BundleLike, Bundles, as_bundle, labelled
from workbench.viz.distributions import (
    compare_bundles,
    group_summary,
    guess_counts,
    round_trajectories,
    tokens_per_response,
)
from workbench.viz.figure_parts import (
    DATA_COLOR,
    HEATMAP_COLORS,
    LABEL_WIDTH,
    MARKS,
    GameMarks,
    round_marks,
)

KINDS: tuple[str, ...] = ("bars", "heatmap", "quantiles", "means")
"""The ways `distribution` draws guesses by category."""

MAX_PANELS = 20
"""The most categories `distribution(kind="bars")` draws (one panel each); a heatmap takes more."""

# --------------------------------------------------------------------------- histogram


@fp.styled
def histogram(bundle: BundleLike, round: int | None = None) -> Figure:
    """One round's guesses (the last when None) as a histogram of whole-number bins, with the
    round's target, winning number and the game's equilibrium marked."""
    opened = as_bundle(bundle)
    counts = guess_counts(opened, round)
    marks = round_marks(opened, counts.attrs["round"])
    fig = fp.new_figure(3.8)
    ax = fig.add_subplot()
    ax.bar(
        counts["guess"],
        counts["count"],
        width=1.0,
        align="edge",
        color=DATA_COLOR,
        linewidth=0.3,
        label=f"guesses ({marks.n_valid} valid of {marks.n})",
    )
    fp.mark_lines(ax, marks)
    fp.game_xlim(ax, opened)
    ax.set_xlabel("guess (whole-number bins: bar g holds guesses in [g, g + 1))")
    ax.set_ylabel("agents")
    fp.title(fig, f"Round {marks.round} guesses", opened)
    ax.legend(loc="best")
    return fig


# --------------------------------------------------------------------------- distribution


@fp.styled
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
    ref = fp.parse_reference(reference, "category", ("label", "low", "high"))
    draw = {"bars": _bars, "heatmap": _heatmap, "quantiles": _quantiles, "means": _means}[kind]
    return draw(opened, by, marks, ref)


def _bars(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    counts = guess_counts(bundle, marks.round, by)
    categories = list(counts["category"].cat.categories)
    if len(categories) > MAX_PANELS:
        raise ValueError(
            f"kind: 'bars' draws one panel per category and {by!r} has {len(categories)} "
            f"(more than {MAX_PANELS}); use kind='heatmap', 'quantiles' or 'means'"
        )
    groups = dict(list(counts.groupby("category", observed=False)))
    fig = fp.new_figure(1.0 + 1.05 * len(categories))
    axes = fig.subplots(len(categories), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    others = set() if ref is None else set(ref["category"]) - {str(c) for c in categories}
    for i, (ax, category) in enumerate(zip(axes, categories, strict=True)):
        rows = groups[category]
        ax.bar(
            rows["guess"], rows["share"], width=1.0, align="edge", color=DATA_COLOR, linewidth=0.3
        )
        fp.mark_lines(ax, marks, labelled=i == 0)
        fp.reference_lines(ax, ref, str(category), others)
        ax.set_title(
            f"{category} (n={rows['count'].sum()})", fontsize="medium", fontweight="normal", pad=3
        )
        if rows.empty:
            ax.text(
                0.5,
                0.5,
                "no valid answers",
                transform=ax.transAxes,
                ha="center",
                va="center",
                color="0.4",
                fontstyle="italic",
                zorder=6,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5},
            )
    fp.game_xlim(axes[-1], bundle)
    axes[-1].set_xlabel("guess (whole-number bins)")
    fig.supylabel("share of the category's valid answers", fontsize="medium")
    fp.title(fig, f"Round {marks.round} guesses by {by}", bundle)
    fp.legend(fig, axes)
    return fig


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
    fig = fp.new_figure(1.6 + 0.42 * len(categories))
    ax = fig.add_subplot()
    cmap = sns.blend_palette(HEATMAP_COLORS, as_cmap=True).with_extremes(bad="white")
    mesh = ax.pcolormesh(
        np.arange(low, high + 2),
        np.arange(len(categories) + 1) - 0.5,
        np.ma.masked_equal(shares, 0.0),
        cmap=cmap,
        vmin=0,
        shading="flat",
    )
    fig.colorbar(mesh, ax=ax, label="share of the category's valid answers", pad=0.01)
    fp.mark_lines(ax, marks)
    fp.reference_lines(ax, ref, None, set())
    fp.rows_axis(ax, [fp.label(c, n_valid[c]) for c in categories])
    ax.set_xlim(low, high + 1)
    ax.grid(False)
    ax.set_xlabel("guess (whole-number bins; white: nobody)")
    fp.title(fig, f"Round {marks.round} guesses by {by}", bundle)
    fp.legend(fig, [ax])
    return fig


def _quantiles(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    summary = group_summary(bundle, marks.round, by)
    rows = [str(c) for c in summary["category"]]
    fig = fp.new_figure(1.9 + 0.5 * (len(rows) + (0 if ref is None else len(ref))))
    ax = fig.add_subplot()
    fp.boxes(ax, summary, means=True)
    fp.mark_lines(ax, marks, behind=True)
    names = fp.reference_points(ax, ref, "category", rows)
    labels = [
        fp.label(c, valid, n)
        for c, valid, n in zip(rows, summary["n_valid"], summary["n"], strict=True)
    ]
    fp.rows_axis(ax, labels + [fp.label(n) for n in names[len(rows) :]])
    fp.game_xlim(ax, bundle)
    ax.set_xlabel("guess")
    fp.title(fig, f"Round {marks.round} guesses by {by}", bundle)
    fp.legend(fig, [ax])
    return fig


def _means(bundle: Bundle, by: str, marks: GameMarks, ref: pd.DataFrame | None) -> Figure:
    summary = group_summary(bundle, marks.round, by)
    rows = [str(c) for c in summary["category"]]
    fig = fp.new_figure(1.9 + 0.45 * (len(rows) + (0 if ref is None else len(ref))))
    ax = fig.add_subplot()
    fp.intervals(ax, summary, size=7)
    for i in np.flatnonzero(summary["n_valid"].to_numpy() == 0):
        fp.no_answers(ax, i)
    fp.mark_lines(ax, marks, behind=True)
    names = fp.reference_points(ax, ref, "category", rows)
    labels = [
        fp.label(c, valid, n)
        for c, valid, n in zip(rows, summary["n_valid"], summary["n"], strict=True)
    ]
    fp.rows_axis(ax, labels + [fp.label(n) for n in names[len(rows) :]])
    ax.set_xlabel("mean guess (95% t interval)")
    fp.title(fig, f"Round {marks.round} mean guess by {by}", bundle)
    fp.legend(fig, [ax])
    return fig


# --------------------------------------------------------------------------- trajectories

_TRAJECTORY_STATS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("mean", "mean", {"color": DATA_COLOR, "marker": "o", "linestyle": "-"}),
    ("median", "median", {"color": colours.MEDIAN, "marker": "s", "linestyle": "--"}),
    ("target", "target", {**MARKS["target"], "marker": "^"}),
    ("winning_guess", "winning number", {**MARKS["winning"], "marker": "*", "markersize": 9}),
)
"""round_trajectories' columns drawn by `trajectories`: column, name, line style."""


@fp.styled
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
    ref = fp.parse_reference(reference, "round", ("label",))
    eq = float(equilibrium(opened.config.game))
    rounds = sorted(int(r) for r in table["round"].unique())
    if by is None:
        fig = fp.new_figure(4.0)
        ax = fig.add_subplot()
        for column, name, style in _TRAJECTORY_STATS:
            ax.plot(table["round"], table[column], label=name, **style)
        axes = [ax]
        ax.set_ylabel("guess")
    else:
        fig = fp.new_figure(6.6)
        axes = list(fig.subplots(2, 2, sharex=True, sharey=True).flat)
        categories = list(dict.fromkeys(table["category"]))
        palette = fp.palette(len(categories))
        for ax, (column, name, _) in zip(axes, _TRAJECTORY_STATS, strict=True):
            for color, category in zip(palette, categories, strict=True):
                rows = table[table["category"] == category]
                ax.plot(
                    rows["round"], rows[column], marker="o", color=color, label=fp.label(category)
                )
            ax.set_title(name, fontsize="medium")
        fig.supylabel("guess", fontsize="medium")
    for ax in axes:
        if np.isfinite(eq):
            ax.axhline(eq, label=f"equilibrium {fp.fmt(eq)}", **MARKS["equilibrium"])
        ax.set_xticks(rounds)
    if ref is not None:
        styles = fp.reference_styles(ref)
        for label, rows in ref.groupby("label", sort=False):
            axes[0].plot(
                rows["round"],
                rows["mean"],
                linestyle="none",
                markersize=7,
                label=f"{label} (mean)",
                **styles[str(label)],
            )
    for ax in axes[-2:] if by is not None else axes:
        ax.set_xlabel("round")
    fp.title(fig, "Guesses per round" + ("" if by is None else f" by {by}"), opened)
    fp.legend(fig, axes)
    return fig


# --------------------------------------------------------------------------- several bundles


@fp.styled
def compare(
    bundles: Bundles, round: int | None = None, reference: pd.DataFrame | None = None
) -> Figure:
    """Several bundles side by side, one row each: a round's quartile box (whiskers min to max),
    mean with its 95% interval, target and winning number (each bundle's last round when
    `round` is None); beside it the mean per round when any bundle played more than one.

    `reference` (a DataFrame with `label` and `mean`, optional `low`, `high`, and `source`,
    the legend's name for the markers, "reference" when absent) adds reference means: on the
    row of the bundle of that label, else on a row of its own.
    """
    opened = labelled(bundles)
    labels = list(opened)
    sources = None if reference is None or "source" not in reference else reference["source"]
    ref = fp.parse_reference(reference, "label", ("low", "high"))
    if ref is not None:
        names = "reference" if sources is None else sources.astype(str).to_numpy()
        ref = ref.rename(columns={"label": "row"}).assign(label=names)
    summaries = [group_summary(b, round) for b in opened.values()]
    table = compare_bundles(list(opened.values()), labels)
    chosen = [s.attrs["round"] for s in summaries]
    several = table.groupby("label")["round"].nunique().max() > 1
    n_rows = len(labels) + (0 if ref is None else len(set(ref["row"].astype(str)) - set(labels)))
    rows_height = 0.9 + 0.5 * n_rows
    fig = fp.new_figure(1.0 + rows_height + (2.8 if several else 0))
    if several:
        ax, trend = fig.subplots(2, 1, height_ratios=[rows_height, 2.4])
    else:
        ax, trend = fig.add_subplot(), None
    both = pd.concat(summaries, ignore_index=True)
    fp.boxes(ax, both, means=False)
    fp.intervals(ax, both, size=6, offset=0.3)  # below the box, its line apart from whiskers
    picked = pd.concat(
        [
            table[(table["label"] == name) & (table["round"] == r)]
            for name, r in zip(labels, chosen, strict=True)
        ]
    )
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
    ax.plot(
        picked["winning_guess"],
        y,
        linestyle="none",
        marker="x",
        markersize=8,
        markeredgewidth=2,
        color=MARKS["winning"]["color"],
        label="winning number",
        zorder=6,
    )
    equilibria = {float(equilibrium(b.config.game)) for b in opened.values()}
    if len(equilibria) == 1 and np.isfinite(eq := equilibria.pop()):
        ax.axvline(eq, label=f"equilibrium {fp.fmt(eq)}", **MARKS["equilibrium"])
    names = fp.reference_points(ax, ref, "row", labels, offset=0.3)  # beside the mean
    rows = [fp.label(f"{name} (round {r})") for name, r in zip(labels, chosen, strict=True)]
    fp.rows_axis(ax, rows + [fp.label(n) for n in names[len(labels) :]])
    ax.set_xlabel("guess")
    same_round = len(set(chosen)) == 1
    ax.set_title(f"round {chosen[0]}" if same_round else "each bundle's last round")
    if trend is not None:
        palette = fp.palette(len(labels))
        for color, name in zip(palette, labels, strict=True):
            rows_of = table[table["label"] == name]
            trend.plot(
                rows_of["round"],
                rows_of["mean"],
                marker="o",
                color=color,
                label=textwrap.shorten(name, LABEL_WIDTH),
            )
        trend.set_xticks(sorted(table["round"].unique()))
        trend.set_xlabel("round")
        trend.set_ylabel("mean guess")
        trend.set_title("mean per round")
        trend.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fp.title(fig, "Bundles compared")
    fp.legend(fig, [ax])
    return fig


@fp.styled
def tokens(bundles: Bundles) -> Figure:
    """Mean completion tokens per response and prompt tokens per call, per bundle and round,
    from `tokens_per_response` (behavioural policies spend none: 0). A round whose answers have
    no token counts is marked "no counts"; a round a bundle did not play has no bar."""
    opened = labelled(bundles)
    labels = list(opened)
    tables = {name: tokens_per_response(b) for name, b in opened.items()}
    rounds = sorted({int(r) for t in tables.values() for r in t["round"]})
    bar = 0.8 / max(len(rounds), 1)
    fig = fp.new_figure(1.5 + len(labels) * max(0.5, 0.22 * len(rounds)))
    axes = fig.subplots(1, 2, sharey=True)
    palette = fp.palette(len(rounds)) if len(rounds) > 1 else [DATA_COLOR]
    annotate = len(labels) * len(rounds) <= 16
    for ax, column, title, unit in (
        (axes[0], "completion_tokens_mean", "completion tokens", "mean per response"),
        (axes[1], "prompt_tokens_mean", "prompt tokens", "mean per call"),
    ):
        for j, (number, color) in enumerate(zip(rounds, palette, strict=True)):
            played = [(i, t[t["round"] == number]) for i, t in enumerate(tables.values())]
            played = [(i, rows[column].iloc[0]) for i, rows in played if len(rows)]
            y = np.array([i for i, _ in played]) - 0.4 + bar * (j + 0.5)
            values = np.array([v for _, v in played], dtype=float)
            bars = ax.barh(
                y, np.nan_to_num(values), height=bar, color=color, label=f"round {number}"
            )
            if annotate:
                texts = [fp.fmt(v) if np.isfinite(v) else "no counts" for v in values]
                ax.bar_label(bars, labels=texts, padding=2, fontsize="small")
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel(unit)
        spent = max((np.nanmax(t[column], initial=0) for t in tables.values()), default=0)
        ax.set_xlim(0, 1.25 * spent if spent > 0 else 1)  # 0 to 1 when nothing was spent
        ax.grid(False, axis="y")
    fp.rows_axis(axes[0], [fp.label(n) for n in labels])
    fp.title(fig, "Tokens per response")
    if len(rounds) > 1:
        fp.legend(fig, axes[:1])
    return fig


# --------------------------------------------------------------------------- scale


@fp.styled
def scale(
    seconds: pd.DataFrame,
    reference: pd.DataFrame | None = None,
    *,
    paper_seconds: float | None = None,
    latency: float | None = None,
) -> Figure:
    """Seconds per round against agents (log-log), the paper's Fig. 5: `seconds` has one row
    per agent count (its index) and a column per configuration measured (asyncio, local, ray);
    `reference` rows (system, agents, round_seconds) are other systems' times, `paper_seconds`
    the paper's 1M-agent time and `latency` each dummy agent's wait (the floor)."""
    if seconds.empty:
        raise ValueError("seconds: give one row per agent count and a column per configuration")
    fig = fp.new_figure(5.2)
    ax = fig.add_subplot()
    palette = sns.color_palette("colorblind", len(seconds.columns) + 4)
    for color, configuration in zip(palette, seconds.columns, strict=False):
        ax.plot(
            seconds.index,
            seconds[configuration],
            marker="o",
            linewidth=2,
            color=color,
            label=f"this run: {configuration}",
        )
    if reference is not None:
        markers = iter("sD^vP" * 4)
        systems = reference.dropna(subset=["round_seconds"]).groupby("system", sort=False)
        for color, (system, rows) in zip(palette[len(seconds.columns) :], systems, strict=False):
            fastest = rows.groupby("agents")["round_seconds"].min()
            ax.plot(
                fastest.index,
                fastest.values,
                linestyle=":",
                marker=next(markers),
                markerfacecolor="none",
                color=color,
                label=f"2 cores: {system}",
            )
            ax.plot(
                rows["agents"], rows["round_seconds"], linestyle="none", marker="_", color=color
            )
    if paper_seconds is not None:
        ax.axhline(paper_seconds, color="0.15", linestyle="--", linewidth=1)
        label = f"paper: 1M agents, {paper_seconds:g} s, 4 nodes x 64 cores"
        ax.plot(
            [1_000_000],
            [paper_seconds],
            linestyle="none",
            marker="*",
            markersize=14,
            color="0.15",
            label=label,
        )
    if latency is not None:
        ax.axhline(latency, color="0.6", linewidth=1, label=f"each agent's wait, {latency:g} s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("agents")
    ax.set_ylabel("seconds per round")
    ax.set_title("Dummy benchmark: seconds per round")
    fig.legend(loc="outside lower center", ncols=2, fontsize="x-small")
    return fig
