"""Exact group distributions (issue 27, item 1): a bundle's round walked whole on its model.

What the agents drew must fit what `exact_round` says they drew from: per group, the sampled
mean within sampling noise of the exact mean, and over all agents a goodness-of-fit test of the
drawn answers against the exact shares. A later round is walked with each agent's memory
restored from the bundle: the same distinct prompts the run drew from, and every drawn answer
inside its own prompt's support.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from workbench.agents.policies import LLMPolicy
from workbench.errors import ConfigError
from workbench.runtime import Simulation
from workbench.runtime.exact_rounds import exact_round

pytestmark = pytest.mark.slow


def test_group_means_fit_their_exact_distributions(embedded_model, make_config, tmp_path) -> None:
    config = make_config(policy={"kind": "llm"}, n_agents=1500, rounds=1, agents_per_shard=1500)
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    found = exact_round(bundle, embedded_model)
    groups = found.groups("education")
    assert groups["n"].sum() == 1500 and (groups["exact_sd"] > 0).all()
    assert (groups["z"].abs() < 4).all(), groups.to_string()
    shares = found.shares("education")
    totals = shares.groupby("education")[["exact_share", "sampled_share"]].sum()
    assert np.allclose(totals.to_numpy(), 1.0)
    whole = shares.groupby("answer")[["exact_share", "sampled_share"]].sum()
    weights = groups.set_index("education")["n"] / 1500
    expected = shares.assign(w=shares["education"].map(weights)).eval("exact_share * w")
    expected = expected.groupby(shares["answer"]).sum() * 1500
    observed = (shares.assign(w=shares["education"].map(weights)).eval("sampled_share * w")
                .groupby(shares["answer"]).sum() * 1500)  # fmt: skip
    assert (observed[expected == 0] == 0).all()  # nothing drawn where the law puts no mass
    keep = expected >= 5
    pooled_o = np.r_[observed[keep], observed[~keep].sum()]
    pooled_e = np.r_[expected[keep], expected[~keep].sum()]
    pooled_e *= pooled_o.sum() / pooled_e.sum()
    assert stats.chisquare(pooled_o, pooled_e).pvalue > 1e-4, whole.to_string()
    with pytest.raises(ConfigError, match="by: 'shoe_size' is not a persona column"):
        found.groups("shoe_size")


def test_a_later_round_is_walked_with_each_agents_memory(embedded_model, make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=40, rounds=2, agents_per_shard=40)
    sim = Simulation(config, model=embedded_model)
    prompts: list[int] = []

    def count(number, stats_, seconds) -> None:
        policy = sim.backend.policy
        assert isinstance(policy, LLMPolicy)
        prompts.append(policy.counts.prompts - sum(prompts))

    bundle = sim.run(out_dir=tmp_path, progress=False, on_round=count)
    found = exact_round(bundle, embedded_model, 2)
    assert len(found.probs) == prompts[1]  # the run's own distinct prompts of round 2
    drawn = found.drawn.set_index("agent_id")["guess"].reindex(found.personas["agent_id"])
    for agent, guess in enumerate(drawn.to_numpy()):
        prompt = found.prompt_of[agent]
        support = found.answers[prompt][found.probs[prompt] > 0]
        assert guess in support, (agent, guess)
    with pytest.raises(ConfigError, match="round: 3 is not a finished round"):
        exact_round(bundle, embedded_model, 3)
