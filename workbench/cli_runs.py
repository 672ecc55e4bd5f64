"""`workbench runs list|follow|cancel`: the runs of a results folder, from any shell, with the
same status the dashboard shows (`workbench.runs`). Registered on the app in `cli.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench._files import RESULTS_DEFAULT, results_dir

runs_app = typer.Typer(
    help="List, follow and cancel the runs of a results folder (started anywhere).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

RESULTS_HELP = f"results directory a run id is looked up in (default: {RESULTS_DEFAULT})"


@runs_app.command("list")
def runs_list(
    root: Annotated[
        Path | None, typer.Argument(help=f"results directory (default: {RESULTS_DEFAULT})")
    ] = None,
) -> None:
    """List the runs under ROOT with their status: running, complete, failed, cancelled or
    dead (marked running, but its writer is gone), and the launch that started each."""
    from workbench.runs.launch_states import list_runs

    root = results_dir(root)
    frame = list_runs(root)
    if not len(frame):
        typer.echo(f"no runs under {root}")
        return
    typer.echo(frame.astype(object).fillna("-").replace("", "-").to_string(index=False))


@runs_app.command("follow")
def runs_follow(
    run: Annotated[str, typer.Argument(help="a bundle folder, a launch folder or a run id")],
    results: Annotated[Path | None, typer.Option(help=RESULTS_HELP)] = None,
    timeout: Annotated[
        float | None, typer.Option(help="give up after this many seconds (default: never)")
    ] = None,
) -> None:
    """Print RUN's events as they come until it ends; exit 0 when it completed, 1 otherwise.
    A round whose model engines recorded their work (a Ray run's model actors) gets a line
    with each engine's prompts, prompt tokens, nodes and seconds and the largest share."""
    from workbench.cli_tables import engine_line
    from workbench.results.run_statuses import UNKNOWN, RunStatus
    from workbench.runs.follower import follow
    from workbench.runs.launch_states import resolve_run
    from workbench.runtime.events import (
        EngineWork,
        RoundFinished,
        RunFinished,
        RunStarted,
        ShardProgress,
    )

    bundle = resolve_run(run, results)
    status: str = UNKNOWN
    try:
        for event in follow(bundle, poll_s=0.2, timeout_s=timeout):
            if isinstance(event, RunStarted):
                line = f"started {event.run_id}: {event.n_agents} agents, {event.rounds} rounds"
            elif isinstance(event, ShardProgress):
                line = (
                    f"round {event.round} shard {event.shard}: {event.answered}/{event.agents} "
                    f"{event.state}"
                )
            elif isinstance(event, RoundFinished):
                mean, target = event.stats.get("mean"), event.stats.get("target")
                line = f"round {event.round} done: mean {mean}, target {target}"
            elif isinstance(event, EngineWork):
                line = engine_line(event.round, event.engines)
            elif isinstance(event, RunFinished):
                status = event.status
                line = f"{event.status} after {event.rounds_done} rounds" + (
                    f": {event.error}" if event.error else ""
                )
            else:
                continue
            typer.echo(line)
    except TimeoutError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if status != RunStatus.COMPLETE:
        raise typer.Exit(1)


@runs_app.command("cancel")
def runs_cancel(
    run: Annotated[str, typer.Argument(help="a launch folder, its bundle, or a run id")],
    results: Annotated[Path | None, typer.Option(help=RESULTS_HELP)] = None,
) -> None:
    """Interrupt a run started by the launcher (SIGINT, as Ctrl-C: it stops as cancelled),
    once its process is proven to be that launch's `workbench run`; else nothing is sent."""
    from workbench.runs.cancelling import cancel
    from workbench.runs.launch_states import resolve_run

    bundle = resolve_run(run, results)
    pid = cancel(bundle)  # BundleError (one line, exit 2) when it is not proven ours
    typer.echo(f"{bundle.name}: sent SIGINT to its run (pid {pid}); it stops as cancelled")
