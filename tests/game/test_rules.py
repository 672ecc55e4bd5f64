import math

import numpy as np
import pytest

from workbench.config import GameSpec
from workbench.game import RoundStats, equilibrium, round_stats, target, winners


@pytest.mark.parametrize(
    ("ratio", "offset", "expected"),
    [(2 / 3, 0.0, 0.0), (0.5, 5.0, 10.0), (0.51, 0.0, 0.0), (0.6, 10.0, 25.0)],
)
def test_equilibrium_is_offset_over_one_minus_ratio(ratio, offset, expected):
    assert equilibrium(GameSpec(ratio=ratio, offset=offset)) == pytest.approx(expected)


def test_equilibrium_is_clipped_to_the_range():
    assert equilibrium(GameSpec(ratio=0.9, offset=20)) == 100.0  # 200 > high
    assert equilibrium(GameSpec(ratio=0.5, offset=-5)) == 0.0  # -10 < low


def test_equilibrium_with_ratio_one():
    assert math.isnan(equilibrium(GameSpec(ratio=1, offset=0)))
    assert equilibrium(GameSpec(ratio=1, offset=3)) == 100.0
    assert equilibrium(GameSpec(ratio=1, offset=-3, low=-10)) == -10.0


def test_target():
    assert target(60.0, GameSpec(ratio="2/3")) == pytest.approx(40.0)
    assert target(30.0, GameSpec(ratio=0.5, offset=5)) == pytest.approx(20.0)
    assert math.isnan(target(float("nan"), GameSpec()))


def test_winners_closest_valid_agent_wins():
    guesses = np.array([10.0, 30.0, 31.0, 50.0])
    valid = np.array([True, True, True, True])
    assert winners(guesses, valid, 29.0).tolist() == [False, True, False, False]


def test_winners_ties_on_both_sides_and_duplicates_all_win():
    guesses = np.array([20.0, 30.0, 30.0, 40.0, 25.0])
    valid = np.ones(5, dtype=bool)
    assert winners(guesses, valid, 25.0).tolist() == [False, False, False, False, True]
    assert winners(guesses[:4], valid[:4], 25.0).tolist() == [True, True, True, False]


def test_winners_float_ties_within_tolerance_all_win():
    guesses = np.array([0.1 + 0.2, 0.3, 1.0])
    assert winners(guesses, np.ones(3, dtype=bool), 0.0).tolist() == [True, True, False]


def test_winners_ignores_invalid_and_nan():
    guesses = np.array([25.0, np.nan, 40.0])
    valid = np.array([False, True, True])
    assert winners(guesses, valid, 25.0).tolist() == [False, False, True]
    assert not winners(guesses, np.zeros(3, dtype=bool), 25.0).any()
    assert not winners(guesses, valid, float("nan")).any()


def test_winners_shape_mismatch():
    with pytest.raises(ValueError, match=r"guesses has shape \(2,\) but valid has shape \(3,\)"):
        winners(np.zeros(2), np.ones(3, dtype=bool), 1.0)


def test_round_stats_hand_computed_example_excludes_invalid():
    # valid guesses 10, 20, 30, 60: mean 30, median 25, target 20 -> the 20 wins
    guesses = np.array([10.0, 20.0, 30.0, 60.0, 99.0, np.nan])
    valid = np.array([True, True, True, True, False, False])
    stats = round_stats(guesses, valid, GameSpec(ratio="2/3"))
    assert stats.n == 6
    assert stats.n_valid == 4
    assert stats.mean == pytest.approx(30.0)
    assert stats.median == pytest.approx(25.0)
    assert stats.std == pytest.approx(math.sqrt((400 + 100 + 0 + 900) / 4))  # ddof=0
    assert stats.target == pytest.approx(20.0)
    assert stats.winning_guess == 20.0
    assert stats.n_winners == 1
    assert stats.share_within_half == pytest.approx(0.25)


def test_round_stats_tie_between_two_values_reports_the_smaller():
    # mean 30, target 1/2 * 30 + 5 = 20, guesses 19 and 21 (and the 50 that lifts the mean)
    stats = round_stats(np.array([19.0, 21.0, 50.0]), np.ones(3, dtype=bool), _half_plus_5())
    assert stats.target == pytest.approx(20.0)
    assert stats.winning_guess == 19.0
    assert stats.n_winners == 2


def test_round_stats_share_within_half_counts_the_band_inclusively():
    # mean 20, target 10: 9.5 and 10.5 are exactly 0.5 away, 9.4 is not
    guesses = np.array([9.5, 10.5, 9.4, 50.6])
    stats = round_stats(guesses, np.ones(4, dtype=bool), GameSpec(ratio=0.5))
    assert stats.target == pytest.approx(10.0)
    assert stats.share_within_half == pytest.approx(0.5)


def test_round_stats_with_no_valid_guess():
    stats = round_stats(np.array([1.0, 2.0]), np.zeros(2, dtype=bool), GameSpec())
    assert (stats.n, stats.n_valid, stats.n_winners, stats.share_within_half) == (2, 0, 0, 0.0)
    for name in ("mean", "median", "std", "target", "winning_guess"):
        assert math.isnan(getattr(stats, name)), name


def test_round_stats_as_dict_has_every_field():
    stats = round_stats(np.array([50.0]), np.array([True]), GameSpec())
    assert isinstance(stats, RoundStats)
    assert all(type(v) in (int, float) for v in stats.as_dict().values())  # JSON-ready
    assert stats.as_dict() == {
        "n": 1,
        "n_valid": 1,
        "mean": 50.0,
        "median": 50.0,
        "std": 0.0,
        "target": pytest.approx(100 / 3),
        "winning_guess": 50.0,
        "n_winners": 1,
        "share_within_half": 0.0,
        "n_failed": 0,
        "n_extracted": 0,
    }


def test_round_stats_counts_failed_and_extracted_answers():
    guesses = np.array([50.0, np.nan, np.nan, 20.0])
    valid = np.array([True, False, False, True])
    failed = np.array([False, True, True, False])
    extracted = np.array([False, False, False, True])
    stats = round_stats(guesses, valid, GameSpec(), failed=failed, extracted=extracted)
    assert (stats.n, stats.n_valid, stats.n_failed, stats.n_extracted) == (4, 2, 2, 1)
    nothing = round_stats(guesses[1:3], valid[1:3], GameSpec(), failed=failed[1:3])
    assert (nothing.n_valid, nothing.n_failed) == (0, 2)
    with pytest.raises(ValueError, match="failed has shape"):
        round_stats(guesses, valid, GameSpec(), failed=failed[:2])


def test_round_stats_large_population_is_vectorised():
    rng = np.random.default_rng(0)
    guesses = rng.uniform(0, 100, 1_000_000)
    valid = rng.random(1_000_000) < 0.9
    stats = round_stats(guesses, valid, GameSpec())
    assert stats.n_valid == int(valid.sum())
    assert stats.mean == pytest.approx(guesses[valid].mean())
    assert stats.n_winners == int(winners(guesses, valid, stats.target).sum())


def _half_plus_5() -> GameSpec:
    return GameSpec(ratio=0.5, offset=5)
