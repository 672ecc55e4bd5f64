"""The `workbench` command: run games and sweeps, inspect, compare, verify and reproduce
bundles, sample personas, benchmark.

User errors (a bad config, a missing file, an unreadable bundle) print one line naming the field
and the fix and exit with status 2; nothing is half-written. A run that fails after its bundle
was written (e.g. its model server died: RoundFailedError) prints the manifest's error line and
the resume command, and exits with status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from workbench.cli_bench import bench_app
from workbench.cli_bundles import bundles_app
from workbench.cli_runs import runs_app
from workbench.cli_servers import dashboard_command, serve_model_command
from workbench.cli_tables import PLAIN, RoundTable, bar_wanted, invariance_note, text_table
from workbench.errors import EXIT_STATUS_FAILED_RUN, WorkbenchError

app = typer.Typer(
    help="Agent Simulation Workbench: LLM multi-agent 'guess p of the average' games.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    **PLAIN,
)
personas_app = typer.Typer(
    help="Sample personas from a population spec.", no_args_is_help=True, **PLAIN
)
app.add_typer(bundles_app, name="bundles")
app.add_typer(personas_app, name="personas")
app.add_typer(bench_app, name="bench")
app.add_typer(runs_app, name="runs")

MAX_SAMPLE = 10_000_000
"""Most personas `personas sample` draws (it holds them in memory and prints their counts)."""


@app.command("run")
def run_command(
    config: Annotated[Path | None, typer.Argument(help="run config YAML")] = None,
    out: Annotated[Path | None, typer.Option(help="results directory (config output.dir)")] = None,
    seed: Annotated[int | None, typer.Option(help="override the config's seed")] = None,
    n_agents: Annotated[
        int | None, typer.Option("--n-agents", "-n", help="override n_agents")
    ] = None,
    rounds: Annotated[int | None, typer.Option(help="override game.rounds")] = None,
    backend: Annotated[str | None, typer.Option(help="override backend.kind: local or ray")] = None,
    resume: Annotated[
        Path | None, typer.Option(help="finish a cancelled or failed bundle instead")
    ] = None,
    fork: Annotated[
        Path | None,
        typer.Option(
            help="a what-if: a new bundle sharing this bundle's rounds before --at-round, the "
            "rest played with the --set changes"
        ),
    ] = None,
    at_round: Annotated[
        int | None, typer.Option("--at-round", help="with --fork: the first round it plays")
    ] = None,
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            help="override model.base_urls (repeat for several); with --resume: where the "
            "restarted model server answers now",
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option(help="show a progress bar (on a terminal; piped, the rows alone)")
    ] = True,
    example: Annotated[
        str | None, typer.Option(help="run a config shipped with the package, e.g. quickstart")
    ] = None,
    run_id: Annotated[str | None, typer.Option(help="the new bundle's folder name")] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="override any config key, e.g. --set game.ratio=1/2 --set model.temperature=0 "
            "(repeat; the keys a sweep grid takes)",
        ),
    ] = None,
    print_config: Annotated[
        bool,
        typer.Option(
            "--print-config", help="print the config with its overrides as YAML; run nothing"
        ),
    ] = False,
    estimate: Annotated[
        bool,
        typer.Option(
            "--estimate",
            help="print what the run would cost (prompts, tokens, nodes, seconds per round, "
            "measured on its model); run nothing",
        ),
    ] = False,
    nodes: Annotated[
        int | None,
        typer.Option(
            "--nodes",
            min=1,
            help="with --estimate on Ray: the cluster's nodes (K engines with a model actor per "
            "node); default: the connected cluster's, else 1",
        ),
    ] = None,
) -> None:
    """Play a game from CONFIG into a new bundle (or --resume BUNDLE, or --fork BUNDLE
    --at-round K); print the round table."""
    from workbench._examples import example_path
    from workbench.config import apply_overrides, load_run_config, parse_assignments, to_yaml
    from workbench.errors import ConfigError
    from workbench.results import Bundle
    from workbench.results.run_statuses import resume_command
    from workbench.results.writer import check_run_id
    from workbench.runtime import Simulation

    if sum(x is not None for x in (config, resume, example, fork)) != 1:
        raise ConfigError(
            "give a CONFIG file to run, --example NAME, --resume BUNDLE or --fork BUNDLE "
            "(exactly one)"
        )
    if (fork is None) != (at_round is None):
        raise ConfigError("--fork and --at-round go together: --fork BUNDLE --at-round K")
    if example is not None:
        config = example_path(example)
    if resume is not None:
        fixed = {
            "--out": out,
            "--seed": seed,
            "--n-agents": n_agents,
            "--rounds": rounds,
            "--backend": backend,
            "--set": sets or None,
            "--print-config": print_config or None,
            "--estimate": estimate or None,
            "--nodes": nodes,
        }
        fixed["--run-id"] = run_id
        given = [name for name, value in fixed.items() if value is not None]
        if given:
            raise ConfigError(
                f"{', '.join(given)}: a resumed run keeps its bundle's config and folder; "
                "drop them (only --base-url may change where its model answers)"
            )
        if base_url:  # refused in the option's own name, before the resume opens the bundle
            Bundle.open(resume).config.with_base_urls(base_url, "--base-url")
        sim = Simulation.resume(resume, base_urls=base_url or None)
    else:
        flags = {"seed": seed, "n_agents": n_agents, "game.rounds": rounds, "backend.kind": backend}
        overrides = {k: v for k, v in flags.items() if v is not None}
        overrides |= parse_assignments(sets or [], "--set")
        if fork is not None:
            assert at_round is not None
            if base_url:
                overrides["model.base_urls"] = list(base_url)
            sim = Simulation.fork(fork, at_round, overrides)  # refuses what a fork must keep
            cfg = sim.config
        else:
            cfg = load_run_config(config)
            if base_url:
                cfg = cfg.with_base_urls(base_url, "--base-url")
            where = f"{config} (with command-line overrides)"
            cfg = apply_overrides(cfg, overrides, where, base=Path(config).parent)
            sim = Simulation(cfg)
        if print_config:
            typer.echo(to_yaml(cfg, as_written=True), nl=False)
            return
        if estimate:
            typer.echo(sim.estimate(nodes).text())
            return
        if nodes is not None:
            raise ConfigError("--nodes goes with --estimate (a run counts its cluster's nodes)")
        if run_id is not None:
            check_run_id(run_id, cfg.output.folder(out), "--run-id")
    table = RoundTable()
    sim.events.subscribe(table)
    try:
        bundle = sim.run(out_dir=out, progress=bar_wanted(progress), run_id=run_id)
    except KeyboardInterrupt:
        if table.bundle is None:
            typer.echo("interrupted before the bundle was written; nothing to resume", err=True)
        else:
            typer.echo(
                f"interrupted: {table.bundle} is marked cancelled; resume it with\n"
                f"  {resume_command(table.bundle)}",
                err=True,
            )
        raise typer.Exit(130) from None
    except WorkbenchError as exc:
        if table.bundle is None:
            raise  # nothing written: main() prints the one line
        _report_failed_run(table.bundle, exc)
        raise typer.Exit(EXIT_STATUS_FAILED_RUN) from None
    if not table.header_done:
        typer.echo("no rounds played")
    if not bundle.is_complete:
        typer.echo(f"status: {bundle.status}")
    typer.echo(f"bundle: {bundle.path}")
    note = invariance_note(bundle.model)
    if note:
        typer.echo(note, err=True)


def _report_failed_run(path: str, exc: WorkbenchError) -> None:
    """A run that failed after writing its bundle: status and bundle on stdout, the manifest's
    error line and (where a resume can finish it, unless that line already ends with it) the
    resume command on stderr."""
    from workbench.errors import is_resumable, one_line
    from workbench.results import Bundle
    from workbench.results.run_statuses import UNKNOWN, RunStatus, resume_hint

    try:
        bundle = Bundle.open(path)
        status, error, resumable = bundle.status, bundle.error, bundle.resumable
    except WorkbenchError:  # the bundle could not even be marked: say what stopped the run
        status, error, resumable = UNKNOWN, None, is_resumable(exc)
    error = error or one_line(exc)
    typer.echo(f"status: {status}")
    typer.echo(f"bundle: {path}")
    typer.echo(f"error: {error}", err=True)
    failed = RunStatus.FAILED if status == UNKNOWN else status  # it did fail, marked or not
    hint = resume_hint(failed, error, path, resumable=resumable, unless_said=True)
    if hint is not None:
        typer.echo(f"resume it with\n  {hint}", err=True)


@app.command("sweep")
def sweep_command(
    config: Annotated[Path | None, typer.Argument(help="base run config YAML")] = None,
    grid: Annotated[
        Path | None, typer.Option(help="grid YAML: grid: {key: [values]}, cells: [...]")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="experiment folder (default: output.dir/<grid name>)")
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar per cell")] = False,
    fork: Annotated[
        Path | None,
        typer.Option(help="fork this bundle once per cell instead of running CONFIG"),
    ] = None,
    at_round: Annotated[
        int | None, typer.Option("--at-round", help="with --fork: the first round cells play")
    ] = None,
) -> None:
    """Run every cell of GRID over CONFIG (or as forks of --fork BUNDLE --at-round K) into one
    experiment folder, a line per cell; a rerun keeps complete cells and resumes the others.
    Exit 1 when a cell did not complete."""
    from workbench.config import load_run_config
    from workbench.errors import ConfigError
    from workbench.experiment import sweep
    from workbench.experiment.sweep import Base, CellResult, ForkFrom
    from workbench.results import Bundle
    from workbench.results.run_statuses import RunStatus

    if grid is None:
        raise ConfigError("--grid: give the grid YAML to sweep (--grid GRID.yaml)")
    if (config is None) == (fork is None):
        raise ConfigError("give a base CONFIG or --fork BUNDLE --at-round K (exactly one)")
    if (fork is None) != (at_round is None):
        raise ConfigError("--fork and --at-round go together: --fork BUNDLE --at-round K")
    base: Base
    if fork is not None:
        assert at_round is not None
        base = ForkFrom(fork, at_round)
        cfg = Bundle.open(fork).config
    else:
        assert config is not None
        base = cfg = load_run_config(config)
    folder = out if out is not None else cfg.output.folder() / grid.stem
    results: list[CellResult] = []

    def report(result: CellResult) -> None:
        results.append(result)
        typer.echo(result.summary())

    try:
        experiment = sweep(base, grid, folder, progress=progress, on_cell=report)
    except KeyboardInterrupt:
        typer.echo(
            f"interrupted: the cell in flight is marked cancelled and {folder} is consistent; "
            "run the same command again to finish the sweep",
            err=True,
        )
        raise typer.Exit(130) from None
    typer.echo(f"index: {experiment.index_path}")
    failed = [r.cell.id for r in results if r.status != RunStatus.COMPLETE]
    if failed:
        typer.echo(
            f"{len(failed)} of {len(results)} cells did not complete: {', '.join(failed)}; "
            "run the same command again to retry them",
            err=True,
        )
        raise typer.Exit(1)


@personas_app.command("sample")
def personas_sample(
    spec: Annotated[Path, typer.Argument(help="population spec YAML")],
    n: Annotated[int, typer.Option("-n", "--n", help="number of agents")] = 10,
    seed: Annotated[int, typer.Option(help="sampling seed")] = 0,
    out: Annotated[Path | None, typer.Option(help="write the personas (.parquet or .csv)")] = None,
    show: Annotated[int, typer.Option(help="persona rows to print")] = 5,
) -> None:
    """Sample N personas from SPEC: print counts per category and a few personas."""
    from workbench.config import load_population_spec
    from workbench.errors import ConfigError
    from workbench.population import counts_table, sample_population

    if not 1 <= n <= MAX_SAMPLE:
        raise ConfigError(
            f"-n: sample between 1 and {MAX_SAMPLE:,} personas, got {n:,}; sample larger "
            "populations from Python (workbench.sample_population)"
        )
    population = load_population_spec(spec)
    if out is not None and out.suffix not in (".parquet", ".csv"):
        raise ConfigError(f"--out: use a .parquet or .csv file name, got {out.name!r}")
    personas = sample_population(population, n, seed)
    typer.echo(text_table(counts_table(personas, population)))
    import pandas as pd

    if show > 0:
        with pd.option_context("display.max_colwidth", 120):
            typer.echo(personas.head(show).to_string(index=False))
    if out is not None:
        from workbench.results.writer import write_frame

        write_frame(personas, out)
        typer.echo(f"wrote {len(personas)} personas to {out}")


@personas_app.command("generate")
def personas_generate(
    spec: Annotated[Path, typer.Argument(help="population spec YAML")],
    n: Annotated[int, typer.Option("-n", "--n", help="number of agents")] = 10,
    seed: Annotated[int, typer.Option(help="sampling and generation seed")] = 0,
    out: Annotated[
        Path | None,
        typer.Option(help="persona set .parquet (default personas/<spec name>.parquet)"),
    ] = None,
    model: Annotated[
        str, typer.Option(help="'embedded' or an OpenAI-compatible URL, e.g. http://host:8000/v1")
    ] = "embedded",
    model_name: Annotated[str | None, typer.Option(help="model name the server serves")] = None,
    cache: Annotated[Path | None, typer.Option(help="SQLite response cache file")] = None,
    max_attempts: Annotated[int, typer.Option(help="tries per agent before the template")] = 3,
) -> None:
    """Sample N agents from SPEC and let a language model write each one's persona."""
    import asyncio

    from workbench.agents.persona_writer import generate_personas, persona_model_spec
    from workbench.config import load_population_spec
    from workbench.errors import ConfigError
    from workbench.llm import make_model, sampling_params
    from workbench.population import sample_population
    from workbench.population.persona_sets import save_persona_set

    population = load_population_spec(spec)
    out = out if out is not None else Path("personas") / f"{population.name}.parquet"
    if out.suffix != ".parquet":
        raise ConfigError(f"--out: use a .parquet file name, got {out.name!r}")
    model_spec = persona_model_spec(model, model_name, cache=str(cache) if cache else None)
    chat_model = make_model(model_spec)
    personas = sample_population(population, n, seed)
    frame = asyncio.run(
        generate_personas(
            personas,
            population,
            chat_model,
            seed=seed,
            params=sampling_params(model_spec),
            max_attempts=max_attempts,
        )
    )
    save_persona_set(frame, population, chat_model.identity, out)
    llm = int((frame["persona_source"] == "llm").sum())
    typer.echo(f"personas: {llm} from the model, {len(frame) - llm} from the template")
    for _, row in frame.head(3).iterrows():
        typer.echo(f"- [{row['persona_source']}] {row['persona']}")
    typer.echo(f"wrote {len(frame)} personas to {out}")


app.command("serve-model")(serve_model_command)
app.command("dashboard")(dashboard_command)


def main() -> None:
    """Entry point: run the app, turning workbench errors into one line and their exit status."""
    try:
        app()  # standalone: usage errors and Ctrl-C are reported by typer itself
    except WorkbenchError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_status)


if __name__ == "__main__":
    main()
