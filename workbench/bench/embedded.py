"""`workbench bench embedded`: a run config's rounds on the embedded llama.cpp model against the
floor the engine's own speeds imply (never a timed test).

Each round's prompt tokens given and actually evaluated (the rest came from the prefix cache)
and tokens generated (and decoded: the grammar ends most answers without decoding their last
digit) come from the engine's counters, reset after every round. The floor is
evaluated / prompt tokens/s + decoded / decode tokens/s, with both rates measured in the same
run just before the rounds and again after them (the faster counts). Optionally the same rounds
beside one busy process, and on the Ray backend with their responses compared; always the
no-reuse baseline: round 1's first prompts, each evaluated from a cleared context.

It measures the per-agent path (`model.sampling: server`, one generation per agent, whatever the
config says): the floor is per-agent tokens. Distribution mode, whose cost is its distinct
prompts and answer-trie nodes, is measured by `workbench bench scale`.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.agents.shard import RoundContext, split_into_shards
from workbench.config import LLMPolicySpec, PopulationSpec, RunConfig, load_run_config, validate
from workbench.errors import ConfigError
from workbench.game import RoundStats
from workbench.llm import make_model, sampling_params
from workbench.llm.embedded.engine import EngineCounters
from workbench.llm.llamacpp import LlamaCppModel
from workbench.runtime import Simulation

COMPARED = ["agent_id", "round", "raw", "guess"]
"""The responses columns that must agree between the local and the Ray run."""

BUSY_CODE = "while True: pass"
"""What the busy neighbour of `--under-load` runs: one core's worth of spinning."""


@dataclass(frozen=True)
class Rates:
    """The engine's prompt-eval and decode speeds (tokens/s) at a thread count."""

    prompt_tok_s: float
    decode_tok_s: float
    threads: int

    @classmethod
    def measure(cls, model: LlamaCppModel) -> Rates:
        """The model's speeds now (`LlamaCppModel.measure_rates`)."""
        rates = model.measure_rates()
        return cls(rates["prompt_tok_s"], rates["decode_tok_s"], int(rates["threads"]))

    def faster(self, other: Rates) -> Rates:
        """Each rate's faster measurement (the floor assumes the engine at its best)."""
        return Rates(
            max(self.prompt_tok_s, other.prompt_tok_s),
            max(self.decode_tok_s, other.decode_tok_s),
            max(self.threads, other.threads),
        )

    def describe(self) -> str:
        """'prompt 250 tok/s, decode 115 tok/s (2 threads)'."""
        return (
            f"prompt {self.prompt_tok_s:.0f} tok/s, decode {self.decode_tok_s:.0f} tok/s "
            f"({self.threads} thread{'s' if self.threads != 1 else ''})"
        )


@dataclass(frozen=True)
class RoundCost:
    """What one round took: seconds, agents, and the engine's counters over the round."""

    round: int
    seconds: float
    agents: int
    given: int
    evaluated: int
    generated: int
    decoded: int
    threads: Counter[int]

    def floor(self, rates: Rates) -> float:
        """Seconds the engine needs at best: evaluated / prompt rate + decoded / decode rate."""
        return self.evaluated / rates.prompt_tok_s + self.decoded / rates.decode_tok_s

    def threads_text(self) -> str:
        """The thread counts used: '2', or '2:80,1:20' (threads:requests) when they changed."""
        if len(self.threads) == 1:
            return str(next(iter(self.threads)))
        return ",".join(f"{t}:{k}" for t, k in sorted(self.threads.items(), reverse=True))


@dataclass(frozen=True)
class Played:
    """One run of the config's rounds: each round's seconds (as the bundle records them), their
    costs (from the engine's counters; none on Ray, whose engines live in model actors), the
    run's wall seconds and its responses."""

    seconds: list[float]
    rounds: list[RoundCost]
    total_s: float
    responses: pd.DataFrame

    @property
    def rounds_s(self) -> float:
        """The rounds' seconds together."""
        return sum(self.seconds)


def bench_config(
    path: Path | None = None,
    *,
    n: int | None = None,
    rounds: int | None = None,
    seed: int | None = None,
    sampling: str = "server",
) -> RunConfig:
    """The config to bench (the packaged quickstart by default) with the overrides given, no
    response cache and answers drawn by `sampling` (server: one generation per agent;
    workbench: distribution mode); ConfigError unless its LLM agents ask one embedded model."""
    from workbench._examples import example_path

    source = path if path is not None else example_path("quickstart")
    config = load_run_config(source)
    return bench_settings(config, source, n=n, rounds=rounds, seed=seed, sampling=sampling)


def bench_settings(
    config: RunConfig,
    source: Path,
    *,
    n: int | None = None,
    rounds: int | None = None,
    seed: int | None = None,
    sampling: str = "server",
) -> RunConfig:
    """`config` (read from `source`, named in errors) as `bench_config` sets it: the overrides
    given, no response cache, answers drawn by `sampling`; ConfigError unless its LLM agents
    ask one embedded model."""
    data = config.model_dump(mode="json")
    data |= {k: v for k, v in {"n_agents": n, "seed": seed}.items() if v is not None}
    if rounds is not None:
        data["game"]["rounds"] = rounds
    data["model"]["cache"] = None  # every answer from the engine, on every backend
    data["model"]["sampling"] = sampling
    config = validate(RunConfig, data, f"{source} (with command-line overrides)")
    _check_embedded(config, source)
    return config


def _check_embedded(config: RunConfig, source: Path) -> None:
    """ConfigError naming the field when the config's agents do not ask the embedded model."""
    if not isinstance(config.policy, LLMPolicySpec):
        raise ConfigError(
            f"{source}: policy.kind is {config.policy.kind!r}; the embedded bench needs "
            "policy.kind: llm (agents that ask the model)"
        )
    if config.models:
        raise ConfigError(
            f"{source}: models names a mix ({sorted(config.models)}); the embedded bench runs "
            "one model: remove models and model_shares and set model.kind: embedded"
        )
    if config.model.kind != "embedded":
        raise ConfigError(
            f"{source}: model.kind is {config.model.kind!r}; the embedded bench needs "
            "model.kind: embedded (use `workbench bench served` for a model server)"
        )


def on_backend(config: RunConfig, kind: str, address: str | None = None) -> RunConfig:
    """The config on backend `kind` (local, or ray joining `address`; a local cluster if none),
    its shard sizes kept."""
    data = config.model_dump(mode="json")
    backend = data["backend"] | {"kind": kind}
    if kind == "local":
        backend |= {"address": None, "model_placement": "auto"}
    elif address is not None:
        backend["address"] = address
    data["backend"] = backend
    return validate(RunConfig, data, f"backend (kind {kind})")


def embedded_model(config: RunConfig) -> LlamaCppModel:
    """The config's embedded model, loaded (its counters are what the bench reads)."""
    model = make_model(config.model)
    assert isinstance(model, LlamaCppModel)  # kind embedded, no cache: bench_config
    return model.load()


def play(config: RunConfig, model: LlamaCppModel | None, out_dir: Path) -> Played:
    """Play the config's rounds into a bundle under `out_dir`; with `model` (the local run),
    its counters are read and reset after every round."""
    costs: list[RoundCost] = []

    def count(number: int, stats: RoundStats, seconds: float) -> None:
        if model is not None:
            costs.append(_round_cost(number, seconds, stats.n, model.counters))
            model.counters = EngineCounters()

    sim = Simulation(config, model=model)
    if model is not None:
        model.counters = EngineCounters()
    start = time.perf_counter()
    bundle = sim.run(out_dir=out_dir, progress=False, on_round=count)
    total = time.perf_counter() - start
    seconds = [float(s) for s in bundle.rounds()["seconds"]]
    return Played(seconds, costs, total, bundle.responses())


def _round_cost(number: int, seconds: float, agents: int, counters: EngineCounters) -> RoundCost:
    """A round's cost from the counters the engine kept over it."""
    return RoundCost(
        round=number,
        seconds=seconds,
        agents=agents,
        given=counters.prompt_tokens,
        evaluated=counters.evaluated_tokens,
        generated=counters.generated_tokens,
        decoded=counters.decoded_tokens,
        threads=Counter(counters.threads),
    )


@contextlib.contextmanager
def busy_neighbour() -> Iterator[subprocess.Popen[bytes]]:
    """One busy process (a spinning Python) for as long as the block runs; always killed."""
    process = subprocess.Popen([sys.executable, "-c", BUSY_CODE])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def baseline_s_per_agent(config: RunConfig, model: LlamaCppModel, agents: int) -> float:
    """Seconds per agent for round 1's first `agents` prompts, each evaluated from a cleared
    context in input order (no prefix reuse): what the reuse saves."""
    sim = Simulation(config, model=model)
    cfg = sim.config
    shard = split_into_shards(sim.personas.head(agents), agents, 1)[0]
    requests = Prompts.of(cfg).chats(shard, RoundContext.of(cfg))
    model.load()
    model.reuse_prefix = False
    try:
        start = time.perf_counter()
        asyncio.run(model.generate(requests, sampling_params(cfg.model)))
        return (time.perf_counter() - start) / len(requests)
    finally:
        model.reuse_prefix = True


def differing_rows(a: pd.DataFrame, b: pd.DataFrame) -> int:
    """How many rows differ in agent_id, round, raw or guess (0: identical tables)."""
    key = ["round", "agent_id"]
    left = a[COMPARED].sort_values(key).reset_index(drop=True)
    right = b[COMPARED].sort_values(key).reset_index(drop=True)
    if len(left) != len(right):
        return max(len(left), len(right))
    equal = (left == right) | (left.isna() & right.isna())
    return int((~equal.all(axis=1)).sum())


def embedded_bench(
    config_path: Path | None = None,
    *,
    n: int | None = None,
    rounds: int | None = None,
    seed: int | None = None,
    under_load: bool = False,
    backend: str = "local",
    ray_address: str | None = None,
    baseline_n: int = 10,
) -> str:
    """Run the bench and return its report: per round seconds, tokens and the floor."""
    if backend not in ("local", "ray"):
        raise ConfigError(f"--backend: use local or ray, got {backend!r}")
    if ray_address is not None and backend != "ray":
        raise ConfigError("--ray-address: a Ray cluster is for --backend ray; add it or drop this")
    config = bench_config(config_path, n=n, rounds=rounds, seed=seed)
    local = on_backend(config, "local")
    model = embedded_model(config)
    with tempfile.TemporaryDirectory(prefix="bench-embedded-") as out:
        before = Rates.measure(model)
        quiet = play(local, model, Path(out) / "quiet")
        after = Rates.measure(model)
        lines = _header(config, model, before, after)
        lines += _floor_table(quiet, before.faster(after))
        if under_load:
            with busy_neighbour() as process:
                loaded = play(local, model, Path(out) / "loaded")
            lines += _load_table(quiet, loaded, process.pid)
        if backend == "ray":
            ray = play(on_backend(config, "ray", ray_address), None, Path(out) / "ray")
            lines += _ray_table(quiet, ray)
    agents = max(1, min(baseline_n, config.n_agents))
    per_agent = baseline_s_per_agent(local, model, agents)
    lines += _baseline_lines(quiet, per_agent, agents)
    return "\n".join(lines)


def _header(config: RunConfig, model: LlamaCppModel, before: Rates, after: Rates) -> list[str]:
    """What ran (model, threads policy, config) and the rates the floor uses."""
    identity = model.identity
    threads = ", ".join(f"{k} {v}" for k, v in identity["threads"].items())
    spec = config.population
    population = spec.name if isinstance(spec, PopulationSpec) else spec
    return [
        f"embedded model: {identity['name']} (llama.cpp {identity['engine_version']}; "
        f"threads {threads})",
        f"config {config.name}: {config.n_agents} agents, {config.game.rounds} rounds, "
        f"seed {config.seed}, population {population}",
        "sampling: server (one generation per agent; `workbench bench scale` measures "
        "distribution mode)",
        f"engine rates before the rounds: {before.describe()}",
        f"engine rates after the rounds:  {after.describe()}",
    ]


def _floor_table(played: Played, rates: Rates) -> list[str]:
    """One row per round: seconds, agents, tokens given / evaluated / generated, the floor."""
    lines = [
        f"{'round':>5} {'seconds':>8} {'agents':>6} {'given':>7} {'evaluated':>9} "
        f"{'generated':>9} {'decoded':>7} {'floor_s':>8} {'x_floor':>7} {'threads':>7}"
    ]
    for r in played.rounds:
        floor = r.floor(rates)
        lines.append(
            f"{r.round:>5} {r.seconds:>8.2f} {r.agents:>6} {r.given:>7} {r.evaluated:>9} "
            f"{r.generated:>9} {r.decoded:>7} {floor:>8.2f} {r.seconds / floor:>6.2f}x "
            f"{r.threads_text():>7}"
        )
    floors = sum(r.floor(rates) for r in played.rounds)
    lines += [
        f"rounds together: {played.rounds_s:.2f} s ({len(played.rounds)} rounds; floor "
        f"{floors:.2f} s, {played.rounds_s / floors:.2f}x); total run {played.total_s:.2f} s "
        "(personas, rounds, bundle)",
        "floor = evaluated / prompt tok/s + decoded / decode tok/s (each rate the faster of",
        "before and after); given - evaluated prompt tokens came from the prefix cache",
    ]
    return lines


def _load_table(quiet: Played, loaded: Played, pid: int) -> list[str]:
    """Each round's seconds beside one busy process against the quiet run."""
    lines = [
        f"under load (one busy process beside it, pid {pid}, killed):",
        f"{'round':>5} {'quiet_s':>8} {'loaded_s':>8} {'x_quiet':>7} {'threads':>7}",
    ]
    for q, r in zip(quiet.rounds, loaded.rounds, strict=True):
        lines.append(
            f"{r.round:>5} {q.seconds:>8.2f} {r.seconds:>8.2f} {r.seconds / q.seconds:>6.2f}x "
            f"{r.threads_text():>7}"
        )
    lines.append(
        f"rounds together: quiet {quiet.rounds_s:.2f} s, loaded {loaded.rounds_s:.2f} s "
        f"({loaded.rounds_s / quiet.rounds_s:.2f}x)"
    )
    return lines


def _ray_table(local: Played, ray: Played) -> list[str]:
    """Each round's seconds on the Ray backend against local, and whether the answers agree."""
    lines = [
        "ray backend (the config's shard actors):",
        f"{'round':>5} {'local_s':>8} {'ray_s':>8} {'x_local':>7}",
    ]
    for number, (q, r) in enumerate(zip(local.seconds, ray.seconds, strict=True), 1):
        lines.append(f"{number:>5} {q:>8.2f} {r:>8.2f} {r / q:>6.2f}x")
    differ = differing_rows(local.responses, ray.responses)
    verdict = "yes" if differ == 0 else f"no ({differ} of {len(local.responses)} rows differ)"
    lines += [
        f"rounds together: local {local.rounds_s:.2f} s, ray {ray.rounds_s:.2f} s "
        f"({ray.rounds_s / local.rounds_s:.2f}x)",
        f"responses identical ({', '.join(COMPARED)}): {verdict}",
    ]
    return lines


def _baseline_lines(quiet: Played, per_agent: float, agents: int) -> list[str]:
    """The no-reuse baseline and what round 1 would take at its rate."""
    first = quiet.rounds[0]
    at_rate = per_agent * first.agents
    return [
        f"baseline (no prefix reuse, {agents} agents of round 1, each from a cleared context): "
        f"{per_agent:.3f} s/agent; round 1's {first.agents} agents at that rate {at_rate:.2f} s "
        f"= {at_rate / first.seconds:.1f}x its {first.seconds:.2f} s"
    ]
