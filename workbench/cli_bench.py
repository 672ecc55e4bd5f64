"""`workbench bench embedded|scale|cluster|served|noise|startup|dummy|plots`: benchmarks that
print ratios against an in-run baseline (`cluster`: counts and projections). Registered on the
app in `cli.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

bench_app = typer.Typer(
    help="Benchmarks that print ratios against an in-run baseline.", rich_markup_mode=None
)


@bench_app.command("embedded")
def bench_embedded(
    config: Annotated[Path | None, typer.Option(help="run config (model.kind embedded)")] = None,
    n: Annotated[int | None, typer.Option("-n", help="override n_agents")] = None,
    rounds: Annotated[int | None, typer.Option(help="override game.rounds")] = None,
    seed: Annotated[int | None, typer.Option(help="override the config's seed")] = None,
    under_load: Annotated[bool, typer.Option("--under-load", help="beside a busy process")] = False,
    backend: Annotated[str, typer.Option(help="ray: also on Ray, answers compared")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to join")] = None,
    baseline_n: Annotated[int, typer.Option(min=1, help="agents in the no-reuse baseline")] = 10,
) -> None:
    """A config's rounds (the quickstart by default) on the embedded model against the floor
    that the engine's own prompt-eval and decode speeds imply."""
    from workbench.bench.embedded import embedded_bench

    report = embedded_bench(
        config,
        n=n,
        rounds=rounds,
        seed=seed,
        under_load=under_load,
        backend=backend,
        ray_address=ray_address,
        baseline_n=baseline_n,
    )
    typer.echo(report)


@bench_app.command("noise")
def bench_noise(
    config: Annotated[Path | None, typer.Option(help="run config (model.kind embedded)")] = None,
    n: Annotated[int | None, typer.Option("-n", help="override n_agents")] = None,
    by: Annotated[
        str | None,
        typer.Option(
            help="the persona column to group by (default game.group_by, else the "
            "population's first dimension; the report names the others)"
        ),
    ] = None,
) -> None:
    """How far the engine's numerics move each group's round-1 answers: every distinct prompt
    walked whole with the prompt in canonical pieces and in one batch; per group the exact
    means, the shift and the TVD, and which group gaps exceed them."""
    from workbench.bench.noise import noise_bench

    typer.echo(noise_bench(config, n=n, by=by))


@bench_app.command("scale")
def bench_scale(
    config: Annotated[Path | None, typer.Option(help="run config (model.kind embedded)")] = None,
    n: Annotated[str, typer.Option("-n", help="agent counts, comma-separated")] = (
        "100,10000,100000,1000000"
    ),
    rounds: Annotated[int, typer.Option(help="rounds played at each N")] = 1,
    seed: Annotated[int | None, typer.Option(help="override the config's seed")] = None,
    backend: Annotated[str, typer.Option(help="local or ray")] = "local",
    ray_address: Annotated[str | None, typer.Option(help="Ray cluster to join")] = None,
    baseline_max_n: Annotated[
        int, typer.Option(help="largest N the per-agent baseline may try")
    ] = 100_000,
    baseline_seconds: Annotated[
        float, typer.Option(help="the per-agent baseline stops before an N predicted longer")
    ] = 60.0,
    exact_agents: Annotated[
        int, typer.Option(help="agents recomputed each alone at the smallest N (0: none)")
    ] = 10,
    timeout: Annotated[float, typer.Option(help="seconds one N may take")] = 600.0,
    out: Annotated[Path | None, typer.Option(help="keep the bundles here (default: temp)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Distribution mode at each N (the quickstart by default), each N in its own process:
    seconds, prompts, trie nodes, tokens, draws, peak memory; the log-log slope, the per-agent
    baseline, exactness and the targets."""
    import json

    from workbench.bench.scale import scale_bench
    from workbench.bench.scale_report import report_dict, report_text

    report = scale_bench(
        config,
        ns=n,
        rounds=rounds,
        seed=seed,
        backend=backend,
        ray_address=ray_address,
        baseline_max_n=baseline_max_n,
        baseline_seconds=baseline_seconds,
        exact_agents=exact_agents,
        timeout=timeout,
        out=out,
    )
    typer.echo(json.dumps(report_dict(report), indent=1) if as_json else report_text(report))


@bench_app.command("cluster")
def bench_cluster(
    config: Annotated[Path | None, typer.Option(help="run config (model.kind embedded)")] = None,
    n: Annotated[int, typer.Option("-n", min=1, help="agents")] = 2_000,
    rounds: Annotated[int, typer.Option(min=1, help="rounds played")] = 3,
    nodes: Annotated[
        list[str] | None,
        typer.Option(
            "--nodes",
            metavar="K[,K...]",
            help="engine counts K, repeatable or comma-separated (default 2,4,8; 32 "
            "is always added)",
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="override the config's seed")] = None,
    out: Annotated[Path | None, typer.Option(help="keep the bundle here (default: temp)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    ray: Annotated[
        bool,
        typer.Option(
            "--ray", help="also play it on a K-node local Ray cluster here, for each K up to 8"
        ),
    ] = False,
) -> None:
    """One plan per round for K engines against today's division by shards: the config played
    once locally (the quickstart by default), each round's distinct prompts rebuilt from the
    bundle and counted per engine both ways, with a projected round time; with --ray the plan
    executed on a K-node local Ray cluster, each engine's work measured."""
    import json

    from workbench.bench.cluster import cluster_bench, report_dict, report_text

    report = cluster_bench(config, n=n, rounds=rounds, nodes=nodes, seed=seed, out=out, ray=ray)
    typer.echo(json.dumps(report_dict(report), indent=1) if as_json else report_text(report))


@bench_app.command("served")
def bench_served(
    n: Annotated[int, typer.Option("-n", help="agents in the round")] = 100,
    url: Annotated[
        str | None, typer.Option(help="an OpenAI-compatible /v1 URL; else serve-model starts")
    ] = None,
    name: Annotated[str, typer.Option(help="served model name")] = "smollm2-135m",
    concurrency: Annotated[int, typer.Option(help="requests in flight")] = 4,
    repeats: Annotated[int, typer.Option(help="alternating repeats; the best of each counts")] = 2,
    backends: Annotated[
        str, typer.Option(help="comma-separated: local,ray (ray: shard actors + a model actor)")
    ] = "local",
    structured_output: Annotated[
        str,
        typer.Option(
            help="the run's model.structured_output: auto, grammar, "
            "structured_outputs, guided_regex, json_schema or none"
        ),
    ] = "auto",
    max_tokens: Annotated[int, typer.Option(help="the run's model.max_tokens")] = 8,
) -> None:
    """Workbench overhead over a model server vs the openai client sending the same requests."""
    from workbench.bench.served import served_bench

    kinds = tuple(k.strip() for k in backends.split(",") if k.strip())
    typer.echo(
        served_bench(
            n,
            url,
            name,
            concurrency,
            repeats=repeats,
            backends=kinds,
            structured_output=structured_output,
            max_tokens=max_tokens,
        )
    )


@bench_app.command("startup")
def bench_startup(
    repeats: Annotated[int, typer.Option(help="alternating runs of each command")] = 7,
) -> None:
    """`workbench --help` against bare `python -c "import typer"`, timed side by side."""
    from workbench.bench.startup import startup_bench

    typer.echo(startup_bench(repeats))


@bench_app.command("dummy")
def bench_dummy(
    n: Annotated[int, typer.Option("-n", help="agents")] = 1_000_000,
    rounds: Annotated[int, typer.Option(help="rounds")] = 1,
    latency: Annotated[float, typer.Option(help="seconds each agent's model call waits")] = 1.0,
    configs: Annotated[
        str, typer.Option(help="comma-separated: asyncio,local,local-per-agent,ray")
    ] = "asyncio,local,local-per-agent,ray",
    shards: Annotated[int, typer.Option(help="shards (Ray actors) for the workbench")] = 2,
    seed: Annotated[int, typer.Option(help="seed")] = 0,
) -> None:
    """The paper's dummy benchmark, each configuration in its own process, vs plain asyncio."""
    from workbench.bench.dummy import dummy_bench

    chosen = tuple(c.strip() for c in configs.split(",") if c.strip())
    typer.echo(dummy_bench(n, rounds, latency, seed, chosen, shards))


@bench_app.command("plots")
def bench_plots(
    n: Annotated[int, typer.Option("-n", help="agents in the bundle")] = 1_000_000,
    by: Annotated[str, typer.Option(help="persona column to draw by")] = "education",
    seed: Annotated[int, typer.Option(help="seed")] = 0,
    folder: Annotated[
        Path | None, typer.Option(help="where the bundle is built and reused (default: temp)")
    ] = None,
    repeats: Annotated[int, typer.Option(help="times each step runs; the best counts")] = 3,
    baseline_sample: Annotated[
        int, typer.Option(help="raw values hv.BoxWhisker draws, scaled to n")
    ] = 100_000,
) -> None:
    """The distribution-by-education plot of an N-agent bundle, timed, vs pandas and BoxWhisker."""
    from workbench.bench.plots import plots_bench

    typer.echo(plots_bench(n, by, seed, folder, repeats, baseline_sample))
