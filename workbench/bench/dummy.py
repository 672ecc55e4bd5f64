"""The paper's dummy benchmark: every agent's model call waits `latency` seconds, then answers a
uniform number. Each configuration runs in its own fresh process so its peak memory is its own:

- `asyncio`: the baseline, plain asyncio with one coroutine per agent gathered (no workbench);
- `local`: the workbench's columnar shards in this process, responses written to a bundle;
- `local-per-agent`: the same runtime with one coroutine per agent (the paper's semantics);
- `ray`: the workbench on Ray, one async actor per shard.

Round seconds include aggregation and writing the responses to the bundle. Peak memory is the
peak resident set (VmHWM) of the driver plus, for Ray, of every shard actor process (Ray's own
daemons are not counted).
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CONFIGURATIONS = ("asyncio", "local", "local-per-agent", "ray")
PAPER_SECONDS = 40.0  # 1M dummy agents, one round, 4 nodes x 64 cores (paper Sec. 5)


@dataclass
class Measurement:
    """One configuration's result, as the child process reports it."""

    configuration: str
    agents: int
    round_seconds: list[float]
    peak_mib: float
    note: str = ""
    error: str | None = None


def peak_rss_mib(pid: int | str = "self") -> float:
    """Peak resident set size of a process in MiB (Linux VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _asyncio_round(n: int, latency: float, rng: random.Random) -> float:
    async def agent() -> int:
        await asyncio.sleep(latency)
        return rng.randint(0, 100)

    guesses = await asyncio.gather(*(agent() for _ in range(n)))
    return 2 / 3 * sum(guesses) / len(guesses)


def _measure_asyncio(n: int, rounds: int, latency: float, seed: int) -> Measurement:
    rng, seconds = random.Random(seed), []
    for _ in range(rounds):
        start = time.perf_counter()
        asyncio.run(_asyncio_round(n, latency, rng))
        seconds.append(time.perf_counter() - start)
    return Measurement("asyncio", n, seconds, peak_rss_mib(), "one coroutine per agent, gather")


def _measure_workbench(
    configuration: str, n: int, rounds: int, latency: float, seed: int, shards: int
) -> Measurement:
    from workbench.config import PopulationSpec, RunConfig
    from workbench.runtime import Simulation
    from workbench.runtime.ray_backend import RayBackend

    population = PopulationSpec(
        name="dummy", dimensions=[{"name": "group", "shares": {"a": 0.5, "b": 0.5}}]
    )
    backend = {"kind": "ray", "agents_per_shard": -(-n // shards)}
    if configuration != "ray":
        backend = {"kind": "local", "agents_per_shard": -(-n // shards)}
    config = RunConfig(
        name=f"bench-{configuration}",
        seed=seed,
        n_agents=n,
        population=population,
        game={"rounds": rounds},
        policy={
            "kind": "random",
            "latency_s": latency,
            "per_agent": configuration == "local-per-agent",
        },
        backend=backend,
    )
    sim = Simulation(config)
    actor_peaks: dict[int, float] = {}

    async def after_round(number: int, stats: object, seconds: float) -> None:
        if isinstance(sim.backend, RayBackend):  # actors' peaks, while they are alive
            for place in await sim.backend.placement():
                actor_peaks[place["pid"]] = peak_rss_mib(place["pid"])

    with tempfile.TemporaryDirectory() as out:
        bundle = asyncio.run(sim.arun(out_dir=out, progress=False, on_round=after_round))
        seconds = bundle.rounds()["seconds"].tolist()
    size = -(-n // shards)
    note = f"{-(-n // size)} shards of {size:,} agents"
    if configuration == "local-per-agent":
        note += ", one coroutine per agent"
    if actor_peaks:
        note += f", actors' peak {sum(actor_peaks.values()):.0f} MiB included"
    return Measurement(configuration, n, seconds, peak_rss_mib() + sum(actor_peaks.values()), note)


def measure(
    configuration: str, n: int, rounds: int, latency: float, seed: int, shards: int
) -> Measurement:
    """Run one configuration in this process (the child side of `dummy_bench`)."""
    if configuration == "asyncio":
        return _measure_asyncio(n, rounds, latency, seed)
    return _measure_workbench(configuration, n, rounds, latency, seed, shards)


def _child(
    configuration: str, n: int, rounds: int, latency: float, seed: int, shards: int, timeout: float
) -> Measurement:
    """Measure one configuration in a fresh Python process."""
    args = [configuration, str(n), str(rounds), str(latency), str(seed), str(shards)]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "workbench.bench.dummy", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Measurement(configuration, n, [], float("nan"), error=f"timed out after {timeout}s")
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Measurement(configuration, n, [], float("nan"), error=tail)
    return Measurement(**json.loads(lines[-1]))


def dummy_bench(
    n: int = 1_000_000,
    rounds: int = 1,
    latency: float = 1.0,
    seed: int = 0,
    configurations: tuple[str, ...] = CONFIGURATIONS,
    shards: int = 2,
    timeout: float = 600,
) -> str:
    """Run each configuration in its own process; a table with ratios to the asyncio baseline."""
    unknown = [c for c in configurations if c not in CONFIGURATIONS]
    if unknown:
        from workbench.errors import ConfigError

        raise ConfigError(f"--configs: unknown {unknown}; choose from {list(CONFIGURATIONS)}")
    results = [_child(c, n, rounds, latency, seed, shards, timeout) for c in configurations]
    base = next((r for r in results if r.configuration == "asyncio" and r.round_seconds), None)
    base_s = sum(base.round_seconds) / len(base.round_seconds) if base else float("nan")
    lines = [
        f"dummy benchmark: {n:,} agents, {rounds} round(s), latency {latency:g} s, seed {seed}",
        f"{'configuration':<17} {'round s':>8} {'peak MiB':>9} {'x faster':>9}  note",
    ]
    for r in results:
        if r.error:
            lines.append(f"{r.configuration:<17} {'-':>8} {'-':>9} {'-':>9}  error: {r.error}")
            continue
        mean = sum(r.round_seconds) / len(r.round_seconds)
        ratio = f"{base_s / mean:>8.1f}x" if base is not None else f"{'-':>9}"
        lines.append(f"{r.configuration:<17} {mean:>8.2f} {r.peak_mib:>9.0f} {ratio}  {r.note}")
    lines.append(
        f"x faster: asyncio baseline round seconds / configuration's. Paper: {PAPER_SECONDS:g} s "
        "for 1M agents on 4 nodes x 64 cores."
    )
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    """Child entry point: measure one configuration, print it as one JSON line."""
    configuration, n, rounds, latency, seed, shards = argv
    result = measure(configuration, int(n), int(rounds), float(latency), int(seed), int(shards))
    print(json.dumps(result.__dict__))


if __name__ == "__main__":
    main(sys.argv[1:])
