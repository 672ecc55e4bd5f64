"""The Poisson cognitive-hierarchy model of the beauty contest, and tau fitted to guesses.

Camerer, Ho & Chong (2004), "A Cognitive Hierarchy Model of Games", QJE 119(3): a share
f(k) = Poisson(k; tau) of players think k steps. Level 0 guesses uniformly on [low, high]
(mean (low + high) / 2); level k believes the others are levels 0..k-1 in the normalised shares
f(0..k-1) and best-responds to their mean: offset + ratio * that mean, clipped to the range.
This is `LevelKPolicy` with `model: cognitive_hierarchy` and Poisson depth shares, so a
population that policy plays is the model's, and `fit_tau` recovers its tau.

The estimator matches the mean: tau is where the model's mean guess equals the observed mean,
as CHC fit the beauty-contest data of their Table II. The mean is what the game's target
depends on, it needs no noise model for guesses between the levels' points (real answers are
spread around them), and the model's mean moves monotonically with tau, so the match is unique.
Its interval is a seeded percentile bootstrap of the mean, mapped through that monotone match.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from workbench.config import GameSpec
from workbench.config.policy import MAX_DEPTH, poisson_depth_shares
from workbench.viz.answers import BundleLike, as_bundle, round_answers
from workbench.viz.stats import CONFIDENCE

HUMAN_TAU = 1.5
"""tau that fits human first-round play across many games (Camerer, Ho & Chong 2004)."""

MAX_LEVEL = MAX_DEPTH
"""Deepest level modelled: the deepest `LevelKPolicySpec` depth (0..20)."""

TAU_MAX = 20.0
"""Largest tau searched; a fit there means the guesses are lower than the model reaches."""

N_BOOT = 2000
"""Bootstrap resamples of the mean behind a fit's interval (2000: Efron & Tibshirani's advice
for percentile intervals)."""

_BISECTIONS = 60
_MULTINOMIAL_MAX_VALUES = 1000


@dataclass(frozen=True)
class TauFit:
    """A tau fitted to one set of guesses: the estimate, its 95% interval (low, high), the
    observed and the model's mean, n guesses, and whether tau hit a bound of [0, tau_max]."""

    tau: float
    low: float
    high: float
    mean: float
    predicted_mean: float
    n: int
    at_bound: bool
    n_boot: int

    def as_dict(self) -> dict:
        """The fields as a plain dict, for tables."""
        return asdict(self)


def poisson_shares(tau: float, max_level: int = MAX_LEVEL) -> np.ndarray:
    """Poisson(tau) shares of levels 0..max_level, normalised over them (they sum to 1): the
    table `policy: {kind: level_k, tau: ...}` plays."""
    return np.array(list(poisson_depth_shares(tau, max_level).values()), dtype=np.float64)


def level_guesses(tau: float, game: GameSpec, max_level: int = MAX_LEVEL) -> np.ndarray:
    """The guess of each level 0..max_level (level 0's entry is its mean, the midpoint)."""
    shares = poisson_shares(tau, max_level)
    guesses = np.empty(max_level + 1)
    guesses[0] = (game.low + game.high) / 2
    for k in range(1, max_level + 1):
        weights = shares[:k]
        believed = float(np.dot(weights, guesses[:k]) / weights.sum())
        guesses[k] = min(max(game.offset + game.ratio * believed, game.low), game.high)
    return guesses


def predicted_mean(tau: float, game: GameSpec, max_level: int = MAX_LEVEL) -> float:
    """The population's mean guess under Poisson(tau) levels 0..max_level."""
    return float(np.dot(poisson_shares(tau, max_level), level_guesses(tau, game, max_level)))


def tau_from_mean(
    mean: float, game: GameSpec, *, max_level: int = MAX_LEVEL, tau_max: float = TAU_MAX
) -> float:
    """The tau in [0, tau_max] whose model mean is `mean` (by bisection; the model's mean is
    monotone in tau). A mean beyond what [0, tau_max] reaches gives the nearer bound."""
    if not math.isfinite(mean):
        return float("nan")
    low, high = 0.0, float(tau_max)
    at_low, at_high = predicted_mean(low, game, max_level), predicted_mean(high, game, max_level)
    falling = at_high < at_low
    if (mean >= at_low) if falling else (mean <= at_low):
        return low
    if (mean <= at_high) if falling else (mean >= at_high):
        return high
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        beyond = predicted_mean(middle, game, max_level) > mean
        if beyond == falling:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def bootstrap_means(guesses: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `n_boot` resamples (with replacement) of `guesses`.

    Few distinct values (integer answers): one multinomial draw per resample over them, so a
    million guesses cost no more than a hundred; otherwise resampled indices, in chunks of 16M,
    which costs n_boot x n (about 1 s for 10k guesses and the default n_boot).
    """
    values, counts = np.unique(guesses, return_counts=True)
    n = guesses.size
    if values.size <= _MULTINOMIAL_MAX_VALUES:
        draws = rng.multinomial(n, counts / n, size=n_boot)
        return draws @ values / n
    chunk = max(1, (1 << 24) // n)
    means = [
        guesses[rng.integers(0, n, size=(min(chunk, n_boot - start), n))].mean(axis=1)
        for start in range(0, n_boot, chunk)
    ]
    return np.concatenate(means)


def fit_tau(
    guesses: np.ndarray,
    game: GameSpec,
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
    max_level: int = MAX_LEVEL,
    tau_max: float = TAU_MAX,
) -> TauFit:
    """tau matching the mean of `guesses` (one round's valid answers), with a 95% interval.

    The interval is the percentile bootstrap: `n_boot` resamples from
    `np.random.default_rng(seed)`; tau is monotone in the mean, so the mean's percentiles
    mapped to tau are exactly the bootstrap taus' percentiles (two fits instead of n_boot).
    """
    values = np.asarray(guesses, dtype=np.float64)
    values = values[np.isfinite(values)]
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if values.size == 0:
        nan = float("nan")
        return TauFit(nan, nan, nan, nan, nan, 0, False, n_boot)
    fit = {"game": game, "max_level": max_level, "tau_max": tau_max}
    mean = float(values.mean())
    tau = tau_from_mean(mean, **fit)
    means = bootstrap_means(values, n_boot, np.random.default_rng(seed))
    tail = (1 - CONFIDENCE) / 2 * 100
    ends = sorted(tau_from_mean(float(m), **fit) for m in np.percentile(means, [tail, 100 - tail]))
    return TauFit(
        tau=tau,
        low=ends[0],
        high=ends[1],
        mean=mean,
        predicted_mean=predicted_mean(tau, game, max_level),
        n=int(values.size),
        at_bound=tau in (0.0, float(tau_max)),
        n_boot=n_boot,
    )


def fit_tau_by_group(
    bundle: BundleLike, by: str | None, round: int = 1, **options: Any
) -> pd.DataFrame:
    """`fit_tau` for each category of `by` (None: everyone) in `round`: one row per category.

    Round 1 by default: the model describes first-round play, before anyone has seen a target.
    `options` go to `fit_tau` (n_boot, seed, max_level, tau_max); a category without valid
    answers has n 0 and nan estimates.
    """
    bundle = as_bundle(bundle)
    answers = round_answers(bundle, round, by)
    game = bundle.config.game
    codes, guesses = answers.valid_only()
    rows = [
        {"category": category, **fit_tau(guesses[codes == i], game, **options).as_dict()}
        for i, category in enumerate(answers.categories)
    ]
    frame = pd.DataFrame(rows)
    frame["category"] = pd.Categorical(frame["category"], categories=answers.categories)
    frame.attrs.update(by=by, round=answers.round)
    return frame
