"""One colour per quantity, in every plot: the interactive views (`viz.plots` and its parts,
the live round, the exact views) and the static figures (`viz.figures`) take their colours
from here and nowhere else, so the target is the same red and the winning guess the same green
wherever they are drawn, and no colour stands for two things.

The colours are seaborn's colour-blind palette, with a purple for the exact distribution that
no red or orange is near. `QUANTITIES` names each quantity's colour;
categories and bundles, which are not quantities, cycle through `CATEGORIES`, which holds
none of the quantities' colours (a category line is never mistaken for the target).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "CATEGORIES",
    "EQUILIBRIUM",
    "EXACT",
    "GUESSES",
    "MEDIAN",
    "QUANTITIES",
    "REFERENCES",
    "SHARES",
    "TARGET",
    "TARGET_WORD",
    "WINNING",
    "category",
    "reference",
    "share_palette",
]

GUESSES = "#0173b2"
"""What the agents answered: histogram bars, boxes, the sampled mean, tokens per response."""

EXACT = "#7f3c8d"
"""The exact answer distributions (`results.exact_store`): expected counts, exact means, bands."""

TARGET = "#d55e00"
"""The round's target (p times the mean), and the target so far of a round in progress."""

TARGET_WORD = "red"
"""How a title names TARGET's colour ("red line: target")."""

WINNING = "#029e73"
"""The winning guess (the valid guess closest to the target)."""

EQUILIBRIUM = "#262626"
"""The game's equilibrium (near black, dashed)."""

MEDIAN = "#56b4e9"
"""The median guess (trajectories)."""

REFERENCES: tuple[str, ...] = ("#000000", "#cc78bc", "#949494", "#ca9161", "#fbafe4")
"""Reference numbers, one per label in order: the first (the human baseline, the paper's
numbers) black, further labels after it."""

CATEGORIES: tuple[str, ...] = (
    "#0173b2",
    "#cc78bc",
    "#ca9161",
    "#949494",
    "#56b4e9",
    "#ece133",
    "#fbafe4",
    "#17becf",
)
"""Categories and bundles in order, cycling: none of the target's, the winning guess's or the
exact distribution's colours (nor orange, too near the target's red)."""

SHARES: tuple[str, ...] = ("#d4e6f4", "#6baed6", "#08306b")
"""A share's colour map (heatmaps) from the fewest to the most answers, light enough that the
marks drawn over it stay seen."""

QUANTITIES: dict[str, str] = {
    "guesses": GUESSES,
    "exact distribution": EXACT,
    "target": TARGET,
    "winning guess": WINNING,
    "equilibrium": EQUILIBRIUM,
    "median": MEDIAN,
    "reference": REFERENCES[0],
}
"""Each quantity's one colour, by name."""


def category(i: int) -> str:
    """The i-th category's or bundle's colour (cycling)."""
    return CATEGORIES[i % len(CATEGORIES)]


def reference(i: int) -> str:
    """The i-th reference label's colour (cycling)."""
    return REFERENCES[i % len(REFERENCES)]


def share_palette(n: int = 256) -> list[str]:
    """SHARES blended into `n` colours (bokeh takes a colour map as a list)."""
    stops = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in SHARES], dtype=float)
    at = np.linspace(0, len(SHARES) - 1, n)
    rgb = np.stack([np.interp(at, np.arange(len(SHARES)), stops[:, k]) for k in range(3)], 1)
    return ["#{:02x}{:02x}{:02x}".format(*(int(round(v)) for v in row)) for row in rgb]
