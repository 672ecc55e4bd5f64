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
from typing import Any

import httpx

from workbench.agents.prompts import Prompts
from workbench.agents.shard import RoundContext, split_into_shards
from workbench.bench import DEFAULT_SPEC
from workbench.config import RunConfig, load_population_spec
from workbench.errors import ConfigError, ModelError
from workbench.llm import sampling_params
from workbench.llm.openai_compat import OpenAICompatModel
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


async def _direct(url: str, bodies: list[dict[str, Any]], concurrency: int) -> float:
    """Seconds to send the very request bodies the workbench sends (constraint and seed
    included) with the openai client, `concurrency` at a time."""
    from openai import NOT_GIVEN, AsyncOpenAI

    limit = asyncio.Semaphore(concurrency)
    async with AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0) as client:

        async def one(body: dict[str, Any]) -> None:
            extra = {k: v for k, v in body.items() if k not in STANDARD_FIELDS}
            async with limit:
                await client.chat.completions.create(
                    model=body["model"],
                    messages=body["messages"],
                    temperature=body["temperature"],
                    top_p=body["top_p"],
                    max_tokens=body["max_tokens"],
                    seed=body.get("seed", NOT_GIVEN),
                    extra_body=extra,
                )

        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - start


STANDARD_FIELDS = frozenset({"model", "messages", "temperature", "top_p", "max_tokens", "seed"})
"""Body fields the openai client takes as arguments; the rest (the constraint) goes as extra."""


def served_bench(
    n: int = 100,
    url: str | None = None,
    name: str = "smollm2-135m",
    concurrency: int = 4,
    seed: int = 0,
    repeats: int = 2,
    backends: tuple[str, ...] = ("local",),
    structured_output: str = "auto",
    max_tokens: int = 8,
) -> str:
    """Workbench round seconds vs direct openai-client seconds for the same N requests.

    `backends`: `local`, and/or `ray` (a local Ray cluster; two shard actors sending their
    batches through one model actor, as `model_placement: auto` does for an openai model).
    `structured_output` and `max_tokens` are the run's (`model.*`): both sides send the
    constraint in the mode the server is proven to honour, so the bench times the real workload.
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
                "max_tokens": max_tokens,
                "structured_output": structured_output,
            },
        )
        sim = Simulation(config)
        shard = split_into_shards(sim.personas, n, 1)[0]
        model = OpenAICompatModel.from_spec(config.model)
        asyncio.run(model.check())  # the constraint mode the server honours, proven
        requests = Prompts().chats(shard, RoundContext.of(sim.config))
        params = sampling_params(config.model)
        bodies = [model.body(r, params, base) for r in requests]
        mode = model.mode_for(requests[0], base)  # what the answers are sent with
        sims = {kind: _on(config, kind) for kind in backends}
        direct: list[float] = []
        ours: dict[str, list[float]] = {kind: [] for kind in backends}
        valid: dict[str, int] = {}
        for _ in range(repeats):  # alternate, so drift in the server hits all alike
            direct.append(asyncio.run(_direct(base, bodies, concurrency)))
            for kind, sim in sims.items():
                with tempfile.TemporaryDirectory() as out:
                    bundle = sim.run(out_dir=out, progress=False)
                    ours[kind].append(float(bundle.rounds()["seconds"].iloc[0]))
                    valid[kind] = int(bundle.rounds()["n_valid"].iloc[0])
    best_direct = min(direct)
    lines = [
        f"served model {name} at {base} ({model.servers[base].describe()}): {n} agents, "
        f"concurrency {concurrency}, constraint {mode or 'none'}, max_tokens {max_tokens}, "
        f"best of {repeats}",
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
