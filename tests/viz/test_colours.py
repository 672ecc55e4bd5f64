"""One colour per quantity in every plot (`viz.colours`): each quantity that a plot draws (the
guesses, the exact distribution, the target, the winning guess, the equilibrium, the median,
the reference numbers) is drawn in its one colour, in the interactive views and in the static
figures alike, read back from the plot objects' options and the figures' artists."""

from __future__ import annotations

from collections import defaultdict

import holoviews as hv
import matplotlib.colors as mcolors
import numpy as np
import pandas as pd

from workbench.results.live_round import RoundSoFar
from workbench.viz import colours, figures, plots

REFERENCE = pd.DataFrame({"category": ["nurse"], "mean": [30.0], "label": ["humans"]})
ROUND_REFERENCE = pd.DataFrame({"round": [1], "mean": [30.0], "label": ["humans"]})

LABELS = {
    "target": "target",
    "target so far": "target",
    "winning guess": "winning guess",
    "winning number": "winning guess",
    "equilibrium": "equilibrium",
    "exact distribution": "exact distribution",
    "exact mean": "exact distribution",
    "sampled mean": "guesses",
    "group mean": "guesses",
    "mean": "guesses",
    "median": "median",
    "humans": "reference",
    "reference humans": "reference",
}
"""What an element's label shows (interactive and static plots)."""


def quantity(element: hv.Element) -> str | None:
    """The quantity an interactive element draws: by its label, else by what it is (the
    histogram's bars are the guesses, an unlabelled band the exact distribution's)."""
    if element.label in LABELS:
        return LABELS[element.label]
    if isinstance(element, hv.Histogram):
        return "guesses"
    if isinstance(element, hv.ErrorBars) and element.vdims[0].name == "exact_mean":
        return "exact distribution"
    if isinstance(element, hv.Rectangles) and "q1" in element.kdims[0].name:
        return "guesses"  # the quantile boxes
    return None


def interactive_plots(bundle, other) -> dict[str, object]:
    """Every interactive view that draws a quantity, on real bundles."""
    so_far = RoundSoFar(1, (0,), 3, 3, 60.0, np.array([10, 20, 30]), np.array([1, 1, 1]))
    return {
        "histogram": plots.histogram(bundle),
        "round so far": plots.round_so_far(so_far, bundle.config.game, "live"),
        **{k: plots.distribution(bundle, "occupation", 1, k, REFERENCE) for k in plots.KINDS},
        "trajectories": plots.trajectories(bundle, reference=ROUND_REFERENCE),
        "trajectories by group": plots.trajectories(bundle, "occupation"),
        "compare": plots.compare({"a": bundle, "b": other}),
        "exact groups": plots.exact_groups(bundle, "occupation"),
        "agents": plots.agents(bundle, "latency_s", "guess"),
    }


def test_each_quantity_has_one_colour_in_every_interactive_plot(exact_bundle, hand_bundle):
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for name, plot in interactive_plots(exact_bundle, hand_bundle).items():
        for element in plot.traverse(lambda x: x, [hv.Element]):
            what = quantity(element)
            if what is None:
                continue
            style = hv.Store.lookup_options("bokeh", element, "style").kwargs
            seen[what].add((name, mcolors.to_hex(style["color"])))
    assert set(seen) == set(colours.QUANTITIES), sorted(seen)
    for what, where in seen.items():
        wrong = {(n, c) for n, c in where if c != mcolors.to_hex(colours.QUANTITIES[what])}
        assert not wrong, (what, sorted(wrong))
    drawn_in = {n for n, _ in seen["target"]}
    assert {"histogram", "round so far", "bars", "heatmap", "trajectories", "compare",
            "trajectories by group", "agents"} <= drawn_in  # fmt: skip


def test_the_figures_use_the_same_colours(exact_bundle, hand_bundle):
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    drawn = {
        "histogram": figures.histogram(exact_bundle),
        "trajectories": figures.trajectories(exact_bundle, reference=ROUND_REFERENCE),
        "compare": figures.compare({"a": exact_bundle, "b": hand_bundle}),
        "means": figures.distribution(exact_bundle, "occupation", kind="means"),
    }
    for name, fig in drawn.items():
        for ax in fig.axes:
            for artist in [*ax.lines, *ax.patches, *ax.collections]:
                label = str(artist.get_label()).split(" ")
                for words in (" ".join(label[:2]), label[0]):
                    if words in LABELS or words.startswith("guesses"):
                        what = LABELS.get(words, "guesses")
                        colour = _colour(artist)
                        seen[what].add((name, colour))
                        break
    assert {"target", "winning guess", "equilibrium", "guesses", "median", "reference"} <= set(seen)
    for what, where in seen.items():
        wrong = {(n, c) for n, c in where if c != mcolors.to_hex(colours.QUANTITIES[what])}
        assert not wrong, (what, sorted(wrong))


def _colour(artist) -> str:
    """A matplotlib artist's colour as hex (a line's, a bar's face, a collection's first)."""
    for getter in ("get_color", "get_facecolor"):
        if hasattr(artist, getter):
            value = getattr(artist, getter)()
            if isinstance(value, np.ndarray) and value.ndim == 2:
                value = value[0]
            return mcolors.to_hex(value)
    raise AssertionError(f"no colour on {artist!r}")
