"""The cost before the run (issue 27, item 2): `Simulation.estimate()` against the run itself.

Counts, not seconds, are checked here (seconds are the machine's; `workbench run --estimate`
beside a bench run shows them): round 1's distinct prompts are counted exactly and the nodes its
agents reach are an expectation; later rounds draw agents' answers from the round before's
distributions, stated to be within a factor of 2 of what the run does, and never above the
bound. The guardrail refuses a run before anything is written.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbench.agents.policies import LLMPolicy
from workbench.errors import ConfigError
from workbench.runtime import Simulation
from workbench.runtime.blocking import run_blocking
from workbench.runtime.estimate import estimate_run
from workbench.runtime.prompt_walks import distinct_prefix_tokens

FACTOR = 2.0
"""How far a later round's estimated prompts and nodes may be from the run's (either way)."""


def test_distinct_prefix_tokens_counts_each_shared_prefix_once() -> None:
    assert distinct_prefix_tokens([(1, 2, 3), (1, 2, 4), (1, 5)]) == 3 + 1 + 1
    assert distinct_prefix_tokens([(7, 8), (7, 8)]) == 2
    assert distinct_prefix_tokens([]) == 0


def run_counts(sim: Simulation, out_dir) -> list[dict[str, int]]:
    """What distribution mode did in each round of the run (the policy's counts)."""
    actual: list[dict[str, int]] = []
    before: dict[str, int] = {}

    def count(number, stats, seconds) -> None:
        policy = sim.backend.policy
        assert isinstance(policy, LLMPolicy)
        totals = policy.counts.as_dict()
        actual.append({k: v - before.get(k, 0) for k, v in totals.items()})
        before.update(totals)

    sim.run(out_dir=out_dir, progress=False, on_round=count)
    return actual


def assert_estimated(estimate, actual: list[dict[str, int]]) -> None:
    """Round 1's prompts counted, its nodes an expectation; later rounds within FACTOR."""
    rows = estimate.table().to_dict("records")
    print([(r["prompts"], r["nodes"]) for r in rows], [(a["prompts"], a["nodes"]) for a in actual])
    first, *later = zip(rows, actual, strict=True)
    assert first[0]["prompts"] == first[1]["prompts"]  # counted
    assert first[0]["nodes"] == pytest.approx(first[1]["nodes"], rel=0.25)  # an expectation
    for row, done in later:
        assert done["prompts"] <= row["prompts_bound"]
        for key in ("prompts", "nodes"):
            ratio = row[key] / done[key]
            assert 1 / FACTOR <= ratio <= FACTOR, f"round {row['round']} {key}: {ratio:.2f}x"


def test_the_estimate_matches_the_run_it_estimates(embedded_model, make_config, tmp_path) -> None:
    """The estimate's counts come near the run's; and agents converge, so round 3's distinct
    prompts drawn from round 2's own distributions are nearer the run's than those drawn from
    round 1's every round (the former estimate, `later="first"`)."""
    config = make_config(policy={"kind": "llm"}, n_agents=500, rounds=3, agents_per_shard=500)
    sim = Simulation(config, model=embedded_model)
    estimate = sim.estimate()
    assert estimate.mode == "distribution mode" and estimate.rates["s_per_token"] > 0
    first = run_blocking(estimate_run(config, embedded_model, sim.personas, later="first"))
    actual = run_counts(Simulation(config, model=embedded_model), tmp_path)
    assert_estimated(estimate, actual)
    real, new, old = actual[2]["prompts"], estimate.rounds[2].prompts, first.rounds[2].prompts
    print(f"round 3 distinct prompts: run {real}, estimate {new}, former estimate {old}")
    assert abs(new - real) < abs(old - real)
    assert estimate.rounds[0].prompts == first.rounds[0].prompts == actual[0]["prompts"]


def test_a_mixed_population_is_estimated_share_by_share(make_config, tmp_path) -> None:
    """Two models (the embedded model at two temperatures) share the agents: each share is
    estimated on its own model and the rounds summed; the run's counts are both models'."""
    config = make_config(policy={"kind": "llm"}, n_agents=200, rounds=2, agents_per_shard=200)
    data = config.model_dump(mode="json") | {
        "models": {
            "cold": {"temperature": 0.5, "n_threads": 1},
            "hot": {"temperature": 1.5, "n_threads": 1},
        },
        "model_shares": {"cold": "1/4", "hot": "3/4"},
    }
    data["game"].pop("group_by", None)
    config = type(config).model_validate(data)
    estimate = Simulation(config).estimate()
    assert estimate.mode == "2 models (cold, hot): distribution mode"
    assert estimate.n_agents == 200 and estimate.seconds > 0
    assert {k for k, v in estimate.rates.items() if v > 0} == {
        f"{m} {r}" for m in ("cold", "hot") for r in ("s_per_token", "s_per_node")
    }
    sim = Simulation(config)
    assert sim.personas["model"].value_counts().to_dict() == {"hot": 150, "cold": 50}
    assert_estimated(estimate, run_counts(sim, tmp_path))


def test_the_guardrail_refuses_a_run_above_its_limit(embedded_model, make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=50, rounds=2)
    config = config.model_copy(update={"max_estimated_seconds": 1e-6})
    with pytest.raises(ConfigError, match="max_estimated_seconds: this run is estimated at"):
        Simulation(config, model=embedded_model).run(out_dir=tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_one_generation_per_agent_is_estimated_per_request(make_config):
    from workbench.llm.llamacpp import LlamaCppModel

    config = make_config(
        policy={"kind": "llm"}, n_agents=30, rounds=2, model={"sampling": "server"}
    )
    per_agent = LlamaCppModel(n_threads=1, sampling="server")
    try:
        estimate = Simulation(config, model=per_agent).estimate()
    finally:
        per_agent.close()
    assert estimate.mode.startswith("one generation per agent (rate of a batch of 30")
    assert [r.prompts for r in estimate.rounds] == [30, 30]
    assert estimate.seconds > 0


def test_cli_estimate_prints_the_table_and_runs_nothing(make_config, tmp_path) -> None:
    config = tmp_path / "run.yaml"
    from workbench.config import to_yaml

    config.write_text(to_yaml(make_config(policy={"kind": "level_k"}, rounds=3)))
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "run", str(config), "--estimate"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "estimate: 10 agents, no model" in done.stdout and "about 0 s in all" in done.stdout
    assert not (tmp_path / "results").exists()
