"""`workbench bench scale`: distribution mode's cost as the number of agents grows.

A config's rounds (the quickstart by default) on the embedded model at each N, each N in its own
fresh process so its peak memory is its own. Per N and round: seconds (as the bundle records
them), distinct prompts, answer-trie nodes evaluated on the engine (and asked, with the memo's
hits), prompt tokens evaluated, decodes, draws (agent-steps), the seconds spent scoring nodes
and the process's peak resident set. Then the log-log slope of seconds against N, the seconds
per node evaluated (the engine's share is flat; the rest is per-agent work), today's per-agent
path (`sampling: server`) at the largest N it finishes in about a minute as the baseline, the
check of each agent alone (`runtime.alone_check.check_alone`) at the smallest N, and the
issue's targets.
Numbers are reported, never asserted.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.bench.dummy import peak_rss_mib
from workbench.bench.embedded import bench_config, embedded_model, on_backend
from workbench.errors import ConfigError

DEFAULT_NS = "100,10000,100000,1000000"
MAX_N = 10_000_000
"""Most agents one N may ask for (the personas of a run are held in memory)."""
ABOUT = 1.5
"""The per-agent baseline's next N runs while its predicted seconds stay within this factor of
--baseline-seconds ("the largest N it finishes in about a minute")."""


@dataclass
class RoundScale:
    """One round at one N: seconds and what the engine and the answer tries did (None where
    the run's engine is not in the measuring process: on Ray)."""

    round: int
    seconds: float
    prompts: int | None = None  # distinct prompts drawn (per-agent path: requests)
    nodes: int | None = None  # trie nodes evaluated on the engine
    nodes_asked: int | None = None  # trie nodes the walks asked for (memo hits included)
    evaluated: int | None = None  # prompt tokens evaluated
    decoded: int | None = None  # answer tokens decoded
    row_calls: int | None = None  # llama_decode calls they took (batched: fewer)
    draws: int | None = None  # agent-steps drawn
    answers: int | None = None  # agents answered
    leaves: int | None = None  # distinct (prompt, answer) pairs
    score_s: float | None = None  # seconds scoring nodes (prompts and answer tokens)


@dataclass
class ScaleRun:
    """One N in one process: its rounds, peak memory, bundle and exactness verdict."""

    n: int
    sampling: str
    backend: str
    rounds: list[RoundScale] = field(default_factory=list)
    peak_mib: float = float("nan")
    bundle: str | None = None
    exact_checked: int = 0
    exact_mismatches: int = 0
    error: str | None = None

    @property
    def seconds(self) -> float:
        """The rounds' seconds together."""
        return sum(r.seconds for r in self.rounds)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScaleRun:
        """A run as its child process printed it."""
        rounds = [RoundScale(**r) for r in data.pop("rounds")]
        return cls(**data, rounds=rounds)


@dataclass(frozen=True)
class ChildSpec:
    """What one child process measures."""

    n: int
    rounds: int
    seed: int | None
    sampling: str
    backend: str
    out: str
    config: str | None = None
    ray_address: str | None = None
    exact_agents: int = 0


def parse_ns(text: str, option: str = "-n") -> list[int]:
    """Agent counts from '100,10000': ascending, distinct; ConfigError naming `option`."""
    parts = [p.strip().replace("_", "") for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        raise ConfigError(
            f"{option}: give agent counts separated by commas, e.g. 100,10000; got {text!r}"
        )
    ns = sorted({int(p) for p in parts})
    if ns[0] < 1 or ns[-1] > MAX_N:
        raise ConfigError(f"{option}: each agent count must be 1 to {MAX_N:,}; got {text!r}")
    return ns


def measure(spec: ChildSpec) -> ScaleRun:
    """Play one N in this process (the child side of `scale_bench`)."""
    import asyncio

    from workbench.agents.policies import LLMPolicy
    from workbench.llm.embedded.engine import EngineCounters
    from workbench.runtime import Simulation
    from workbench.runtime.local import LocalBackend

    config = bench_config(
        Path(spec.config) if spec.config else None,
        n=spec.n,
        rounds=spec.rounds,
        seed=spec.seed,
        sampling=spec.sampling,
    )
    config = on_backend(config, spec.backend, spec.ray_address)
    local = spec.backend == "local"
    model = embedded_model(config) if local else None
    sim = Simulation(config, model=model)
    run = ScaleRun(spec.n, spec.sampling, spec.backend)
    before: dict[str, int] = {}

    def count(number: int, stats: object, seconds: float) -> None:
        cost = RoundScale(number, seconds)
        backend = sim.backend
        if model is not None and isinstance(backend, LocalBackend):
            counters = model.counters
            cost.evaluated, cost.decoded = counters.evaluated_tokens, counters.decoded_tokens
            cost.row_calls = counters.row_calls
            if spec.sampling == "server":
                cost.prompts = counters.requests
            elif isinstance(backend.policy, LLMPolicy):  # distribution mode's own counts
                totals = backend.policy.counts.as_dict()
                now = {k: v - before.get(k, 0) for k, v in totals.items()}
                before.update(totals)
                cost.prompts, cost.nodes_asked, cost.draws = (
                    now["prompts"],
                    now["nodes"],
                    now["draws"],
                )
                cost.answers, cost.leaves = now["answers"], now["leaves"]
                cost.nodes, cost.score_s = counters.nodes, counters.score_s
            model.counters = EngineCounters()
        run.rounds.append(cost)

    if model is not None:
        model.counters = EngineCounters()
    out = Path(spec.out) / f"n{spec.n}-{spec.sampling}"
    bundle = asyncio.run(sim.arun(out_dir=out, progress=False, on_round=count))
    run.bundle = str(bundle.path)
    for cost, seconds in zip(run.rounds, bundle.rounds()["seconds"], strict=True):
        cost.seconds = float(seconds)  # the bundle's own figure
    run.peak_mib = peak_rss_mib()  # before the check, which loads nothing new but may grow
    if spec.exact_agents > 0 and spec.sampling == "workbench":
        from workbench.runtime.alone_check import check_alone

        report = check_alone(bundle, model or embedded_model(config), spec.exact_agents)
        run.exact_checked, run.exact_mismatches = report.checked, len(report.mismatches)
    return run


def _child(spec: ChildSpec, timeout: float) -> ScaleRun:
    """Measure one N in a fresh Python process."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "workbench.bench.scale", json.dumps(asdict(spec))],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return ScaleRun(spec.n, spec.sampling, spec.backend, error=f"timed out after {timeout:g} s")
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return ScaleRun(spec.n, spec.sampling, spec.backend, error=tail)
    return ScaleRun.from_dict(json.loads(lines[-1]))


def loglog_slope(ns: list[int], seconds: list[float]) -> float:
    """The least-squares slope of log(seconds) against log(N) (nan for fewer than two N)."""
    points = [(math.log(n), math.log(s)) for n, s in zip(ns, seconds, strict=True) if s > 0]
    if len(points) < 2:
        return float("nan")
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else float("nan")


@dataclass
class ScaleReport:
    """What `scale_bench` measured: the distribution-mode runs (ascending N) and the per-agent
    baseline's, with the settings they ran under."""

    config: str
    rounds: int
    seed: int | None
    backend: str
    runs: list[ScaleRun]
    baseline: list[ScaleRun]
    baseline_seconds: float
    exact_agents: int


def scale_bench(
    config_path: Path | None = None,
    *,
    ns: str = DEFAULT_NS,
    rounds: int = 1,
    seed: int | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    baseline_max_n: int = 100_000,
    baseline_seconds: float = 60.0,
    exact_agents: int = 10,
    timeout: float = 600.0,
    out: Path | None = None,
) -> ScaleReport:
    """Measure every N of `ns` in distribution mode, then the per-agent baseline (see the
    module docstring); bundles go to `out` (kept) or a temporary folder."""
    counts = parse_ns(ns)
    if backend not in ("local", "ray"):
        raise ConfigError(f"--backend: use local or ray, got {backend!r}")
    if ray_address is not None and backend != "ray":
        raise ConfigError("--ray-address: a Ray cluster is for --backend ray; add it or drop this")
    if rounds < 1:
        raise ConfigError(f"--rounds: play at least one round, got {rounds}")
    if exact_agents < 0:
        raise ConfigError(f"--exact-agents: give 0 (no check) or more, got {exact_agents}")
    config = bench_config(config_path, n=counts[0], rounds=rounds, seed=seed)  # checked up front
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as temp:
        folder = str(out if out is not None else temp)

        def spec(n: int, sampling: str, exact: int = 0) -> ChildSpec:
            path = str(config_path) if config_path is not None else None
            return ChildSpec(n, rounds, seed, sampling, backend, folder, path, ray_address, exact)

        runs = [
            _child(spec(n, "workbench", exact_agents if i == 0 else 0), timeout)
            for i, n in enumerate(counts)
        ]
        baseline = _baseline(counts, baseline_max_n, baseline_seconds, timeout, spec)
        measured = {r.n for r in runs}
        for run in baseline:  # distribution mode at the baseline's N too: a same-N ratio
            if run.error is None and run.n not in measured:
                runs.append(_child(spec(run.n, "workbench"), timeout))
                measured.add(run.n)
    runs.sort(key=lambda r: r.n)
    return ScaleReport(
        config.name, rounds, config.seed, backend, runs, baseline, baseline_seconds, exact_agents
    )


def _baseline(
    counts: list[int], max_n: int, limit_s: float, timeout: float, spec: Any
) -> list[ScaleRun]:
    """The per-agent path up a ladder of N (the -n values and the powers of ten between them,
    up to `max_n`): each next N runs only if the last one's seconds, scaled linearly, stay
    within `ABOUT` x `limit_s`."""
    top = min(max_n, counts[-1])
    ladder = sorted({n for n in counts if n <= top} | _powers_of_ten(counts[0], top))
    runs: list[ScaleRun] = []
    for n in ladder:
        if runs:
            last = runs[-1]
            if last.error is not None or last.seconds * n / last.n > ABOUT * limit_s:
                break
        runs.append(_child(spec(n, "server"), min(timeout, 2 * ABOUT * limit_s + 60.0)))
    return runs


def _powers_of_ten(low: int, high: int) -> set[int]:
    """The powers of ten in [low, high]."""
    out, p = set(), 1
    while p <= high:
        if p >= low:
            out.add(p)
        p *= 10
    return out


def main(argv: list[str]) -> None:
    """Child entry point: measure one N, print it as one JSON line."""
    run = measure(ChildSpec(**json.loads(argv[0])))
    print(json.dumps(asdict(run)))


if __name__ == "__main__":
    main(sys.argv[1:])
