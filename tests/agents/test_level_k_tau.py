"""`policy: {kind: level_k, tau: ...}`: a Poisson cognitive-hierarchy population from one
number, e.g. a tau fitted to human or LLM guesses, and the fit recovering it."""

from __future__ import annotations

import pytest

from workbench.config import LevelKPolicySpec, load_run_config, save_yaml
from workbench.config.policy import poisson_depth_shares
from workbench.errors import ConfigError
from workbench.runtime import Simulation
from workbench.viz import fit_tau, poisson_shares


def test_tau_makes_the_depth_shares_poisson():
    spec = LevelKPolicySpec(tau="3/2", model="cognitive_hierarchy")
    assert spec.tau == 1.5
    assert spec.depth_shares == poisson_depth_shares(1.5)
    assert abs(sum(spec.depth_shares.values()) - 1) < 1e-12
    assert spec.depth_shares[1] == pytest.approx(1.5 * spec.depth_shares[0])
    assert poisson_shares(1.5).tolist() == list(spec.depth_shares.values())
    assert LevelKPolicySpec(tau=0).depth_shares[0] == 1.0


def test_tau_and_other_depth_shares_are_refused_but_a_stored_config_reloads(make_config, tmp_path):
    with pytest.raises(ConfigError, match="give tau or depth_shares, not both"):
        LevelKPolicySpec(tau=1.5, depth_shares={0: 0.5, 1: 0.5})
    with pytest.raises(ConfigError, match="tau"):
        LevelKPolicySpec(tau=25)
    config = make_config(policy={"kind": "level_k", "tau": 1.5})
    path = tmp_path / "config.yaml"
    save_yaml(config, path)  # holds tau and the shares it made
    assert load_run_config(path).policy == config.policy


@pytest.mark.slow
def test_a_fitted_tau_played_back_is_recovered(make_config, tmp_path):
    policy = {"kind": "level_k", "tau": 1.5, "model": "cognitive_hierarchy"}
    config = make_config(policy=policy, n_agents=10_000, rounds=1, agents_per_shard=5_000)
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    guesses = bundle.responses()["guess"].to_numpy()
    fit = fit_tau(guesses, config.game)
    assert fit.low <= 1.5 <= fit.high, fit
