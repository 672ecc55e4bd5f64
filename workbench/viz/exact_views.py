"""A round's exact answer distributions drawn beside what the agents drew (`Bundle.exact`).

`exact_curve` is the expected count at every whole number of the game's range (each agent's
prompt's distribution, summed), drawn as the outline of the histogram's bins: zero wherever the
law gives no mass, so 15% of the mass at 100 is one tall step at 100, never a ramp or a plateau
over the answers between. `exact_groups` places each category's exact mean with the band its
sampled mean falls in 95% of the time (`results.exact_gaps.group_bands`), and the sampled mean
as a dot: a dot outside its band is more than sampling noise, and two bands apart are groups
the model itself tells apart (for the evaluation the bundle's model pins; `workbench bench
noise` measures how far another evaluation moves them, and `group_gaps` says it in words).
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd

from workbench.config import GameSpec
from workbench.results import Bundle
from workbench.results.exact_gaps import group_bands
from workbench.results.exact_store import ExactRound
from workbench.viz import colours
from workbench.viz.plot_parts import HEIGHT, WIDTH, opts

EXACT_LABEL = "exact distribution"
"""The exact curve's legend entry."""


def exact_counts(found: ExactRound, game: GameSpec) -> pd.DataFrame:
    """The expected number of agents at every whole number from the game's low to its high
    (guess, expected): 0 where no agent's distribution gives the number mass (answers outside
    the range that some distribution does give mass to widen it)."""
    shares = found.answer_shares()
    answers = shares["answer"].to_numpy(dtype=np.int64)
    low = int(min(np.floor(game.low), answers.min(initial=int(np.floor(game.low)))))
    high = int(max(np.floor(game.high), answers.max(initial=int(np.floor(game.high)))))
    expected = np.zeros(high - low + 1)
    np.add.at(expected, answers - low, shares["exact_share"].to_numpy() * len(found.prompt_of))
    return pd.DataFrame({"guess": np.arange(low, high + 1), "expected": expected})


def exact_curve(found: ExactRound, game: GameSpec) -> hv.Curve:
    """The expected guesses per whole number (`exact_counts`) as the outline of the histogram's
    bins: the step at g spans [g, g + 1), like bar g, and closes to 0 after the last."""
    counts = exact_counts(found, game)
    end = pd.DataFrame({"guess": [int(counts["guess"].iloc[-1]) + 1], "expected": [0.0]})
    frame = pd.concat([counts, end], ignore_index=True)
    curve = hv.Curve(frame, kdims="guess", vdims="expected", label=EXACT_LABEL)
    return opts(
        curve, color=colours.EXACT, line_width=2, interpolation="steps-post", tools=["hover"]
    )


def exact_groups(bundle: Bundle, by: str, round: int = 1) -> hv.Overlay:
    """Per category of persona column `by`: the exact mean, its 95% sampling band, and the
    sampled mean (see the module)."""
    table = group_bands(bundle.exact(round), by).sort_values(by)
    half = table["band_high"] - table["exact_mean"]
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
            opts(bands, color=colours.EXACT, line_width=2),
            opts(exact, color=colours.EXACT, marker="square", size=9, tools=["hover"]),
            opts(sampled, color=colours.GUESSES, size=8, tools=["hover"]),
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
        xrotation=30 if len(labels) > 5 else 0,
    )
