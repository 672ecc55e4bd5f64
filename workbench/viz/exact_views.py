"""A round's exact answer distributions drawn beside what the agents drew (`Bundle.exact`).

`exact_curve` is the expected count at every whole number (each agent's prompt's distribution,
summed), laid over the sampled histogram as steps; `exact_groups` places each category's exact
mean with the band its sampled mean falls in 95% of the time (1.96 standard errors of a mean
of its n draws), and the sampled mean as a dot: a dot outside its band is more than sampling
noise, and two bands apart are groups the model itself tells apart (for the evaluation the
bundle's model pins; `workbench bench noise` measures how far another evaluation moves them).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.results import Bundle
from workbench.results.exact import ExactRound
from workbench.viz.plot_parts import HEIGHT, WIDTH, colour, opts

EXACT_COLOR = "#dd8452"
"""The exact distribution's colour, beside the sampled bars' blue."""


def exact_curve(found: ExactRound) -> hv.Curve:
    """Expected guesses at each whole number (exact share times agents), centred on the
    histogram's bins, as steps."""
    shares = found.answer_shares()
    n = len(found.prompt_of)
    frame = pd.DataFrame({"guess": shares["answer"] + 0.5, "expected": shares["exact_share"] * n})
    curve = hv.Curve(frame, kdims="guess", vdims="expected", label="exact distribution")
    return opts(curve, color=EXACT_COLOR, line_width=2, interpolation="steps-mid", tools=["hover"])


def exact_groups(bundle: Bundle, by: str, round: int = 1) -> hv.Overlay:
    """Per category of persona column `by`: the exact mean, its 95% sampling band, and the
    sampled mean (see the module)."""
    found = bundle.exact(round)
    table = found.groups(by).sort_values(by)
    half = 1.96 * table["exact_sd"] / np.sqrt(table["n"])
    labels = table[by].astype(str).tolist()
    bands = hv.ErrorBars(
        (labels, table["exact_mean"], half), kdims=by, vdims=["exact_mean", "band"]
    )
    exact = hv.Scatter(
        (labels, table["exact_mean"]), kdims=by, vdims="exact_mean", label="exact mean"
    )
    sampled = hv.Scatter(
        (labels, table["sampled_mean"]), kdims=by, vdims="sampled_mean", label="sampled mean"
    )
    overlay = hv.Overlay(
        [
            opts(bands, color=EXACT_COLOR, line_width=2),
            opts(exact, color=EXACT_COLOR, marker="square", size=9, tools=["hover"]),
            opts(sampled, color=colour(0), size=8, tools=["hover"]),
        ]
    )
    title = f"{bundle.run_id}: round {round} by {by}, exact mean and its 95% sampling band"
    return opts(
        overlay,
        title=title,
        width=WIDTH,
        height=HEIGHT,
        legend_position="top_right",
        ylabel="mean guess",
    )
