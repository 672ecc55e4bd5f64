"""The exact views on a bundle with stored exact distributions (`tests/exact_bundle.py`).

The exact curve is what a person reads as "how many agents would guess g": it must be 0 at
every whole number no agent's law gives mass to (the nurses' law has mass at 2 and 100 and
none between), and the expected count where it does. The group table's bands and the gaps'
verdicts follow `results.exact_gaps`' one rule, in words.
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pytest
from exact_bundle import EXACT_GROUPS, EXACT_LAWS, PER_GROUP

from workbench.results.exact_gaps import (
    BAND_Z,
    GAP_COLUMNS,
    NUMERICS_FACTOR,
    beyond_numerics,
    group_bands,
    group_gaps,
)
from workbench.viz import plots
from workbench.viz.exact_views import EXACT_LABEL


def drawn(curve: hv.Curve, x: float) -> float:
    """The height the browser draws `curve` at `x`, by its interpolation (bokeh's Step modes:
    steps-post holds a point's value up to the next point, steps-mid to half way, steps-pre
    from the previous one; linear joins points by straight lines); 0 outside its points."""
    data = curve.dframe()
    xs, ys = data.iloc[:, 0].to_numpy(float), data.iloc[:, 1].to_numpy(float)
    mode = hv.Store.lookup_options("bokeh", curve, "plot").kwargs.get("interpolation", "linear")
    if x < xs[0] or x > xs[-1]:
        return 0.0
    if mode == "steps-post":
        return float(ys[np.searchsorted(xs, x, side="right") - 1])
    if mode == "steps-pre":
        return float(ys[np.searchsorted(xs, x, side="left")])
    if mode == "steps-mid":
        return float(ys[np.argmin(np.abs(xs - x))])
    return float(np.interp(x, xs, ys))


def expected_counts() -> dict[int, float]:
    """Each answer's expected number of agents: each group's law times its agents, summed."""
    counts: dict[int, float] = {}
    for prompt in EXACT_GROUPS.values():
        for answer, p in EXACT_LAWS[prompt].items():
            counts[answer] = counts.get(answer, 0.0) + PER_GROUP * p
    return counts


def test_the_exact_curve_is_zero_where_the_law_gives_no_mass(exact_bundle) -> None:
    overlay = plots.histogram(exact_bundle)
    curve = next(e for e in overlay if isinstance(e, hv.Curve) and e.label == EXACT_LABEL)
    expected = expected_counts()
    for x in (50.5, 95.5, 99.5):  # between 33 and 100: nobody, not a plateau up to 100
        assert drawn(curve, x) == 0.0, x
    assert drawn(curve, 100.5) == pytest.approx(expected[100])  # 16 agents' worth, one step
    game = exact_bundle.config.game
    for g in range(int(game.low), int(game.high) + 1):  # over bin g, [g, g + 1)
        for x in (g + 0.25, g + 0.5, g + 0.75):
            assert drawn(curve, x) == pytest.approx(expected.get(g, 0.0)), (g, x)
    assert sum(drawn(curve, g + 0.5) for g in range(101)) == pytest.approx(60.0)


def test_the_group_bands_and_the_gaps_verdicts(exact_bundle) -> None:
    bands = group_bands(exact_bundle.exact(1), "occupation").set_index("occupation")
    for job, prompt in EXACT_GROUPS.items():
        law = EXACT_LAWS[prompt]
        mean = sum(a * p for a, p in law.items())
        sd = np.sqrt(sum(a * a * p for a, p in law.items()) - mean**2)
        row = bands.loc[job]
        assert row["exact_mean"] == pytest.approx(mean)
        assert row["band_high"] - row["exact_mean"] == pytest.approx(BAND_Z * sd / np.sqrt(20))
        assert row["in_band"] == (row["band_low"] <= row["sampled_mean"] <= row["band_high"])
    gaps = group_gaps(bands.reset_index(), "occupation")
    assert list(gaps.columns) == list(GAP_COLUMNS) and len(gaps) == 3
    assert (gaps["exact_gap"] >= 0).all() and gaps["exact_gap"].is_monotonic_decreasing
    top = gaps.iloc[0]
    assert (top["group"], top["other"]) == ("nurse", "teacher")
    assert top["exact_gap"] == pytest.approx(60.6 - 26.75)
    assert set(gaps["numerics"]) == {"not measured"}
    assert "bench noise" in top["verdict"] and "33.85 above teacher" in top["verdict"]

    small = group_gaps(bands.reset_index(), "occupation", largest_shift=1.0)
    assert list(small["numerics"]) == ["beyond numerics", "beyond numerics", "within numerics"]
    assert "the model answers these groups differently" in small["verdict"].iloc[0]
    assert "no finding about the groups" in small["verdict"].iloc[2]  # 1.55 < 2 x 1.0
    assert beyond_numerics(2.01, 1.0) and not beyond_numerics(NUMERICS_FACTOR * 1.0, 1.0)


def test_exact_groups_draws_the_bands_table(exact_bundle) -> None:
    overlay = plots.exact_groups(exact_bundle, "occupation")
    bars = next(e for e in overlay if isinstance(e, hv.ErrorBars))
    bands = group_bands(exact_bundle.exact(1), "occupation").sort_values("occupation")
    assert np.allclose(bars.dimension_values(1), bands["exact_mean"])
    assert np.allclose(bars.dimension_values(2), bands["band_high"] - bands["exact_mean"])
