"""The workbench's overhead over a model server: one round of N agents through the whole
workbench (prompts, client, parsing, bundle writing) against the very same requests sent
directly with the official `openai` client at the same concurrency, in the same run.

Without a URL it starts `workbench serve-model` (the embedded SmolLM2 behind llama.cpp's
OpenAI-compatible server) on a free loopback port and stops it afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx

from workbench.agents.policies import LLMPolicy
from workbench.agents.shard import RoundContext, split_into_shards
from workbench.bench import DEFAULT_SPEC
from workbench.config import RunConfig, load_population_spec
from workbench.errors import ConfigError, ModelError
from workbench.llm import make_model, sampling_params
from workbench.llm.base import ChatRequest, SamplingParams
from workbench.runtime import Simulation


@contextlib.contextmanager
def local_server(name: str, threads: int | None = None) -> Iterator[str]:
    """`workbench serve-model` on a free 127.0.0.1 port; yields its base URL, stops it after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "workbench.cli", "serve-model", "--port", str(port)]
    command += ["--name", name] + (["--n-threads", str(threads)] if threads else [])
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ModelError(f"serve-model exited: {process.stderr.read().decode()[-300:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            time.sleep(0.3)
        else:
            raise ModelError("serve-model did not answer within 90 s")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


async def _direct(
    url: str, name: str, requests: list[ChatRequest], params: SamplingParams, concurrency: int
) -> float:
    """Seconds to send `requests` with the openai client, `concurrency` at a time."""
    from openai import AsyncOpenAI

    from workbench.llm.grammar import integer_range_grammar

    limit = asyncio.Semaphore(concurrency)
    async with AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0) as client:

        async def one(request: ChatRequest) -> None:
            extra = {}
            if request.constraint is not None and request.constraint.integer_range:
                extra["grammar"] = integer_range_grammar(*request.constraint.integer_range)
            async with limit:
                await client.chat.completions.create(
                    model=name,
                    messages=list(request.messages),  # type: ignore[arg-type]
                    temperature=params.temperature,
                    top_p=params.top_p,
                    max_tokens=params.max_tokens,
                    seed=request.seed,
                    extra_body=extra,
                )

        start = time.perf_counter()
        await asyncio.gather(*(one(r) for r in requests))
        return time.perf_counter() - start


def served_bench(
    n: int = 100,
    url: str | None = None,
    name: str = "smollm2-135m",
    concurrency: int = 4,
    seed: int = 0,
    repeats: int = 2,
    backends: tuple[str, ...] = ("local",),
) -> str:
    """Workbench round seconds vs direct openai-client seconds for the same N requests.

    `backends`: `local`, and/or `ray` (a local Ray cluster; two shard actors sending their
    batches through one model actor, as `model_placement: auto` does for an openai model).
    """
    unknown = sorted(set(backends) - {"local", "ray"})
    if unknown or not backends:
        raise ConfigError(f"bench served --backends: unknown {unknown}; use local and/or ray")
    with contextlib.ExitStack() as stack:
        base = url or stack.enter_context(local_server(name))
        config = RunConfig(
            name="bench-served",
            seed=seed,
            n_agents=n,
            population=load_population_spec(DEFAULT_SPEC),
            model={
                "kind": "openai",
                "base_urls": [base],
                "name": name,
                "max_concurrency": concurrency,
                "max_tokens": 4,
            },
        )
        sim = Simulation(config)
        shard = split_into_shards(sim.personas, n, 1)[0]
        requests = LLMPolicy(make_model(config.model)).requests(
            shard, RoundContext(1, seed, config.game, n)
        )
        params = sampling_params(config.model)
        sims = {kind: _on(config, kind) for kind in backends}
        direct: list[float] = []
        ours: dict[str, list[float]] = {kind: [] for kind in backends}
        valid: dict[str, int] = {}
        for _ in range(repeats):  # alternate, so drift in the server hits all alike
            direct.append(asyncio.run(_direct(base, name, requests, params, concurrency)))
            for kind, sim in sims.items():
                with tempfile.TemporaryDirectory() as out:
                    bundle = sim.run(out_dir=out, progress=False)
                    ours[kind].append(float(bundle.rounds()["seconds"].iloc[0]))
                    valid[kind] = int(bundle.rounds()["n_valid"].iloc[0])
    best_direct = min(direct)
    lines = [
        f"served model {name} at {base}: {n} agents, concurrency {concurrency}, best of {repeats}",
        f"direct openai client      {best_direct:8.2f} s   ({n / best_direct:.1f} req/s)",
    ]
    for kind, seconds in ours.items():
        best = min(seconds)
        lines += [
            f"workbench round, {kind:5s} (+parse, +bundle) {best:8.2f} s   "
            f"({valid[kind]}/{n} valid answers)",
            f"ratio workbench {kind} / direct  {best / best_direct:8.3f}   (target <= 1.10)",
        ]
    runs = ", ".join(f"{kind} {[round(x, 2) for x in v]}" for kind, v in ours.items())
    lines.append(f"all runs: direct {[round(x, 2) for x in direct]}, {runs}")
    return "\n".join(lines)


def _on(config: RunConfig, backend: str) -> Simulation:
    """The benchmark's simulation on `backend` (local, or ray with two shard actors)."""
    if backend == "ray":
        return Simulation(config).to_dist(shards_per_node=2)
    return Simulation(config)
