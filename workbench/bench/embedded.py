"""Benchmarks that print ratios against a baseline measured in the same run (never timed tests).

`embedded_round_bench`: rounds of N persona agents on the embedded llama.cpp model through the
whole workbench path (prompts, batched model call with shared-prefix reuse, parsing, bundle
writing), against the same round-1 prompts sent one by one from a cleared context (no reuse).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from workbench.agents.policies import LLMPolicy
from workbench.agents.shard import RoundContext, split_into_shards
from workbench.bench import DEFAULT_SPEC
from workbench.config import ModelSpec, RunConfig, load_population_spec
from workbench.llm import sampling_params
from workbench.llm.llamacpp import LlamaCppModel
from workbench.runtime import Simulation


def embedded_round_bench(
    n: int = 100,
    spec_path: Path | None = None,
    seed: int = 0,
    rounds: int = 1,
    baseline_n: int = 25,
) -> str:
    """Run the bench and return its report (agents/s, tokens/s, ratio to the no-reuse baseline)."""
    population = load_population_spec(spec_path or DEFAULT_SPEC)
    model_spec = ModelSpec()
    config = RunConfig(
        name="bench-embedded",
        seed=seed,
        n_agents=n,
        population=population,
        game={"rounds": rounds},
        model=model_spec,
    )
    model = LlamaCppModel(n_ctx=model_spec.n_ctx).load()
    sim = Simulation(config, model=model)
    with tempfile.TemporaryDirectory() as out:
        bundle = sim.run(out_dir=out, progress=False)
        frame = bundle.rounds()
        responses = bundle.responses()
    tokens = responses.groupby("round")[["prompt_tokens", "completion_tokens"]].sum()

    # baseline: the same round-1 prompts, each evaluated from a cleared context, input order
    shard = split_into_shards(sim.personas.head(min(baseline_n, n)), n, 1)[0]
    policy = LLMPolicy(model, sampling_params(model_spec))
    requests = policy.requests(shard, RoundContext(1, seed, config.game, n))
    model.reuse_prefix = False
    start = time.perf_counter()
    asyncio.run(model.generate(requests, sampling_params(model_spec)))
    baseline_per_agent = (time.perf_counter() - start) / len(requests)
    model.reuse_prefix = True

    lines = [
        f"embedded model: {model.identity['name']} (llama.cpp {model.identity['engine_version']}, "
        f"{model.n_threads} threads); {n} agents, population {population.name}, seed {seed}",
        f"{'round':>5} {'seconds':>8} {'agents/s':>9} {'tokens/s':>9} {'prompt tok':>10} "
        f"{'gen tok':>8} {'x baseline':>10}",
    ]
    for row in frame.itertuples():
        tok = tokens.loc[row.round]
        total = tok.prompt_tokens + tok.completion_tokens
        speedup = baseline_per_agent * n / row.seconds
        lines.append(
            f"{row.round:>5} {row.seconds:>8.2f} {n / row.seconds:>9.1f} "
            f"{total / row.seconds:>9.0f} {tok.prompt_tokens:>10} {tok.completion_tokens:>8} "
            f"{speedup:>9.1f}x"
        )
    lines.append(
        f"baseline (no prefix reuse, {len(requests)} agents of round 1): "
        f"{baseline_per_agent:.3f} s/agent = {1 / baseline_per_agent:.1f} agents/s, "
        f"{baseline_per_agent * n:.1f} s for {n} agents"
    )
    lines.append("tokens/s counts every prompt token the model was given, cached or not.")
    return "\n".join(lines)
