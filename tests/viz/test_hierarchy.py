"""The Poisson cognitive-hierarchy model and its tau fit, against the level_k policy."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.agents.policies import LevelKPolicy
from workbench.config import GameSpec, LevelKPolicySpec
from workbench.viz.hierarchy import (
    HUMAN_TAU,
    fit_tau,
    fit_tau_by_group,
    level_guesses,
    poisson_shares,
    predicted_mean,
    tau_from_mean,
)

GAME = GameSpec()


def _ch_policy(tau: float) -> dict:
    """A level_k policy playing the cognitive hierarchy with Poisson(tau) depth shares."""
    shares = {k: float(s) for k, s in enumerate(poisson_shares(tau))}
    return {"kind": "level_k", "model": "cognitive_hierarchy", "depth_shares": shares}


def test_levels_by_hand() -> None:
    guesses = level_guesses(HUMAN_TAU, GAME)
    assert guesses[:3] == pytest.approx([50, 100 / 3, 2 / 3 * (50 + 1.5 * 100 / 3) / 2.5])
    assert np.all(np.diff(guesses) < 0) and guesses[-1] > 0
    assert predicted_mean(0.0, GAME) == 50.0
    assert poisson_shares(0.0)[0] == 1.0 and poisson_shares(3.0).sum() == pytest.approx(1)


@pytest.mark.parametrize("game", [GAME, GameSpec(ratio=0.5, offset=5), GameSpec(ratio=0.7)])
def test_levels_are_the_policys(game: GameSpec) -> None:
    policy = LevelKPolicy(LevelKPolicySpec(**_ch_policy(2.0)))
    assert level_guesses(2.0, game) == pytest.approx(policy.depth_guesses(game, 50.0, 20))


@pytest.mark.parametrize("tau", [0.3, 1.5, 4.0])
def test_tau_from_mean_inverts_the_model(tau: float) -> None:
    for game in (GAME, GameSpec(ratio=0.5, offset=5)):
        assert tau_from_mean(predicted_mean(tau, game), game) == pytest.approx(tau, abs=1e-9)


def test_means_beyond_the_model_give_a_bound() -> None:
    assert tau_from_mean(70.0, GAME) == 0.0
    fit = fit_tau(np.full(50, 80.0), GAME)
    assert fit.tau == 0.0 and fit.at_bound and fit.n == 50
    empty = fit_tau(np.array([np.nan]), GAME)
    assert empty.n == 0 and np.isnan(empty.tau)


def test_the_interval_is_seeded_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(0)
    small, large = rng.integers(0, 70, 100), rng.integers(0, 70, 100_000)
    assert fit_tau(small, GAME, seed=4) == fit_tau(small, GAME, seed=4)
    a, b = fit_tau(small, GAME), fit_tau(large, GAME)
    assert a.low < a.tau < a.high and b.low < b.tau < b.high
    assert b.high - b.low < (a.high - a.low) / 10


def test_fit_recovers_the_tau_a_level_k_population_played(run_bundle) -> None:
    policy = _ch_policy(HUMAN_TAU)
    bundle = run_bundle(policy=policy, n_agents=10_000, rounds=1, seed=3, agents_per_shard=5000)
    table = fit_tau_by_group(bundle, by=None)
    fit = table.iloc[0]
    assert fit["n"] == 10_000 and fit["low"] <= HUMAN_TAU <= fit["high"]
    assert fit["tau"] == pytest.approx(HUMAN_TAU, abs=0.15)
    assert fit["predicted_mean"] == pytest.approx(bundle.rounds()["mean"].iloc[0])


def test_fit_by_group_keeps_every_category(hand_bundle) -> None:
    table = fit_tau_by_group(hand_bundle, by="education", n_boot=200)
    assert list(table["category"]) == [
        "high school", "bachelor's degree", "master's degree", "doctoral degree"
    ]  # fmt: skip
    assert list(table["n"]) == [4, 0, 2, 0] and table["tau"].isna().tolist() == [
        False, True, False, True
    ]  # fmt: skip
    assert table.loc[table["category"] == "master's degree", "tau"].iloc[0] > 8  # guesses of 3
