"""The pure statistics: t quantiles, exact grouped quantiles, intervals of the mean."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.viz.stats import grouped_summary, t_quantile


@pytest.mark.parametrize(
    ("df", "expected", "tolerance"),
    [(1, 12.706205, 1e-6), (2, 4.302653, 1e-6), (3, 3.182446, 4e-3), (4, 2.776445, 1e-3),
     (10, 2.228139, 1e-5), (30, 2.042272, 1e-5), (1000, 1.962339, 1e-6)],
)  # fmt: skip
def test_t_quantile_matches_the_table(df: int, expected: float, tolerance: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=tolerance)


def test_t_quantile_is_nan_without_degrees_of_freedom() -> None:
    assert np.isnan(t_quantile(0.975, 0))
    with pytest.raises(ValueError, match="p must be in"):
        t_quantile(1.0, 3)


def test_grouped_summary_is_exact_per_group() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, 500)
    values = rng.integers(0, 101, 500).astype(float)
    stats = grouped_summary(codes, values, 4)
    for g in range(3):
        mine = values[codes == g]
        assert stats["n_valid"][g] == mine.size
        assert stats["mean"][g] == pytest.approx(mine.mean())
        assert stats["std"][g] == pytest.approx(mine.std())
        q = np.percentile(mine, [0, 25, 50, 75, 100])
        got = [stats[k][g] for k in ("min", "q1", "median", "q3", "max")]
        assert got == pytest.approx(q)
        half = t_quantile(0.975, mine.size - 1) * mine.std(ddof=1) / np.sqrt(mine.size)
        assert stats["ci_high"][g] - stats["mean"][g] == pytest.approx(half)
    assert stats["n_valid"][3] == 0
    assert all(np.isnan(stats[k][3]) for k in ("mean", "ci_low", "median", "q1", "std"))


def test_quartiles_by_hand() -> None:
    stats = grouped_summary(np.array([0, 0, 0, 0, 1]), np.array([40.0, 10, 20, 75.5, 7]), 2)
    # sorted 10 20 40 75.5: positions 0.75, 1.5, 2.25 of 3
    assert stats["q1"][0] == 17.5 and stats["median"][0] == 30.0 and stats["q3"][0] == 48.875
    assert stats["median"][1] == 7.0 and np.isnan(stats["ci_low"][1])  # one value: no interval
