"""The workbench sampler: its documented rule, checked against exact probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from sampler_rule import reference

from workbench.llm.base import SamplingParams
from workbench.llm.distribution.sampler import distribution, draw


@pytest.mark.parametrize(
    ("temperature", "top_p", "top_k", "min_p"),
    [
        (0.7, 0.95, 40, 0.0),
        (1.0, 1.0, 40, 0.0),
        (0.3, 0.5, 40, 0.0),
        (1.7, 0.9, 40, 0.0),
        (0.0, 0.95, 40, 0.0),
        (1.0, 1.0, 0, 0.0),
        (1.0, 0.99, 5, 0.0),
        (0.7, 0.95, 0, 0.05),
        (1.3, 0.8, 12, 0.2),
        (1.0, 1.0, 3, 0.9),
    ],
)
def test_distribution_follows_the_documented_rule(
    temperature: float, top_p: float, top_k: int, min_p: float
) -> None:
    rng = np.random.default_rng(7)
    logits = rng.normal(0, 2, size=60).tolist()
    params = SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p)
    got = distribution(np.array(logits), params)
    want = reference(logits, temperature, top_p, top_k, min_p)
    assert dict(zip(got.choices.tolist(), got.probs.tolist(), strict=True)) == pytest.approx(want)


def test_min_p_applies_after_the_temperature_and_before_top_p() -> None:
    """vLLM's order: min-p is measured on the tempered probabilities, and top-p on what min-p
    left (llama.cpp's default chain did top-p and min-p at temperature 1, before it)."""
    logits = np.log(np.array([0.5, 0.3, 0.15, 0.05]))
    hot = distribution(logits, SamplingParams(temperature=2.0, top_p=1.0, top_k=0, min_p=0.4))
    cold = distribution(logits, SamplingParams(temperature=0.5, top_p=1.0, top_k=0, min_p=0.4))
    # tempered by 2, p/p_max = sqrt(0.3/0.5) = 0.77, sqrt(0.15/0.5) = 0.55 and sqrt(0.1) = 0.32
    assert hot.choices.tolist() == [0, 1, 2]
    assert cold.choices.tolist() == [0]  # tempered by 0.5: (0.3/0.5)^2 = 0.36 < 0.4
    head = distribution(logits, SamplingParams(temperature=1.0, top_p=0.7, top_k=0, min_p=0.5))
    # min-p leaves 0.5 and 0.3 (0.625, 0.375): top-p 0.7 then keeps both
    assert head.choices.tolist() == [0, 1]


def test_out_of_range_settings_are_refused_naming_the_setting() -> None:
    for bad, message in (
        ({"top_k": -1}, r"top_k must be in \[0, 1000000\], got -1"),
        ({"min_p": 1.5}, r"min_p must be in \[0, 1\], got 1.5"),
    ):
        with pytest.raises(ValueError, match=message):
            SamplingParams(**bad)


def test_draw_frequencies_match_the_probabilities() -> None:
    """Inverse-CDF draws over many uniforms hit each token at its probability (chi-square)."""
    from scipy import stats

    logits = np.array([2.0, 1.5, 1.4, 0.2, -1.0, -3.0])
    params = SamplingParams(temperature=0.8, top_p=0.97)
    dist = distribution(logits, params)
    u = np.random.default_rng(3).random(200_000)
    picks = draw(logits, params, u)
    observed = np.array([(picks == c).sum() for c in dist.choices])
    assert observed.sum() == len(u)  # nothing outside the kept tokens
    _, p = stats.chisquare(observed, dist.probs * len(u))
    assert p > 1e-4


def test_ties_and_greedy_pick_the_lowest_token() -> None:
    logits = np.array([1.0, 3.0, 3.0, 2.0])
    assert distribution(logits, SamplingParams(temperature=0)).choices.tolist() == [1]
    spread = distribution(logits, SamplingParams(temperature=1.0, top_p=1.0))
    assert spread.choices.tolist() == [1, 2, 3, 0]


def test_minus_infinity_never_drawn_and_all_masked_refused() -> None:
    logits = np.array([-np.inf, 0.0, -np.inf, 1.0])
    picks = draw(logits, SamplingParams(temperature=1.5, top_p=1.0), np.linspace(0, 0.999, 999))
    assert set(picks.tolist()) == {1, 3}
    with pytest.raises(ValueError, match="minus infinity"):
        distribution(np.array([-np.inf]), SamplingParams())


def test_a_draw_depends_only_on_its_own_uniform() -> None:
    """The same uniform gives the same token whoever else draws with it."""
    logits = np.random.default_rng(1).normal(size=30)
    params = SamplingParams()
    u = np.random.default_rng(2).random(500)
    together = draw(logits, params, u)
    alone = np.array([draw(logits, params, u[i : i + 1])[0] for i in range(len(u))])
    assert (together == alone).all()
