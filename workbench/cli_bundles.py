"""`workbench bundles list|show|compare|verify|reproduce`: result bundles from the shell.
Registered on the app in `cli.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench._files import RESULTS_DEFAULT, results_dir
from workbench.cli_tables import PLAIN, RoundTable, invariance_note, text_table
from workbench.results.round_table import MORE_STATISTICS, ROUND_TABLE

bundles_app = typer.Typer(
    help="List, show, compare, verify and reproduce result bundles.", no_args_is_help=True, **PLAIN
)

SHOW_COLUMNS: dict[str, str] = {**ROUND_TABLE, **MORE_STATISTICS}
"""`bundles show`'s round table: the round table's columns and the other statistics."""


@bundles_app.command("compare")
def bundles_compare(
    bundles: Annotated[list[Path], typer.Argument(help="two or more bundle directories")],
) -> None:
    """Line up bundles: the config keys that differ, then their round statistics side by side."""
    from workbench.experiment import compare_rounds, config_differences, model_differences
    from workbench.results import Bundle

    opened = {f"b{number}": Bundle.open(path) for number, path in enumerate(bundles, 1)}
    differ = config_differences(opened)  # ConfigError for fewer than two
    labels = {bundle.run_id: label for label, bundle in opened.items()}
    for label, bundle in opened.items():
        fork = bundle.forked_from
        forks = (
            ""
            if fork is None
            else (
                f", a fork of {labels.get(fork.get('run_id'), fork.get('run_id'))} "
                f"from round {fork.get('at_round')}"
            )
        )
        typer.echo(f"{label}: {bundle.path} ({bundle.status}{forks})")
    typer.echo(f"config keys that differ:\n{differ.to_string()}" if len(differ) else "config: same")
    models = model_differences(opened)
    if len(models):
        typer.echo(f"what answered differs (answers may differ for it):\n{models.to_string()}")
    rounds = compare_rounds(opened)
    typer.echo(rounds.to_string(float_format=lambda x: f"{x:.2f}") if len(rounds) else "no rounds")


@bundles_app.command("list")
def bundles_list(
    root: Annotated[
        Path | None, typer.Argument(help=f"results directory (default: {RESULTS_DEFAULT})")
    ] = None,
) -> None:
    """List the bundles under ROOT with their status (dead: marked running, writer gone); a
    damaged manifest field reads unknown, the problem column says which and why."""
    from workbench.results import list_bundles

    root = results_dir(root)
    frame = list_bundles(root)  # a damaged field reads unknown, its `problem` says why
    typer.echo(
        text_table(frame.fillna({"problem": ""})) if len(frame) else f"no bundles under {root}"
    )


@bundles_app.command("show")
def bundles_show(bundle: Annotated[Path, typer.Argument(help="bundle directory")]) -> None:
    """Show a bundle's status, model, config summary and round table."""
    from workbench.results import Bundle
    from workbench.results.reproduction import build_reach
    from workbench.results.statuses import resume_hint

    b = Bundle.open(bundle)
    cfg = b.config
    game = cfg.game.as_written()
    typer.echo(f"run:     {b.run_id} ({b.status})")
    typer.echo(f"created: {b.created_at}  finished: {b.finished_at}")
    typer.echo(
        f"game:    ratio={game['ratio']} offset={game['offset']} "
        f"range=[{game['low']}, {game['high']}] rounds={cfg.game.rounds} "
        f"({len(b.rounds_done)} done)"
    )
    typer.echo(f"agents:  {cfg.n_agents} ({cfg.policy.kind}), seed {cfg.seed}")
    model = b.model
    typer.echo(f"model:   {model.get('name', model.get('policy', '-'))} {model.get('engine', '')}")
    reach = build_reach(model)
    if reach:
        typer.echo(f"build:   {reach}")
    for url, server in (model.get("servers") or {}).items():  # OpenAI-compatible endpoints
        kind = " ".join(str(v) for v in (server.get("kind"), server.get("version")) if v)
        typer.echo(
            f"server:  {url} ({kind}), constraint {server.get('constraint') or 'none'}, "
            f"seed {model.get('seed', 'per_request')}"
        )
    note = invariance_note(model)
    if note:
        typer.echo(note)
    if b.error:
        typer.echo(f"error:   {b.error}")
    hint = resume_hint(b.status, b.error, b.path)
    if hint is not None:
        typer.echo(f"resume:  {hint}")
    frame = b.rounds()
    if not len(frame):
        typer.echo("no rounds completed")
        return
    table = RoundTable(SHOW_COLUMNS)
    typer.echo(table.header())
    for row in frame.to_dict("records"):
        typer.echo(table.row(row))
    if b.exact_rounds:  # output.exact_distributions: each group's exact mean beside its draws
        columns = [c for c in b.personas().columns if c not in ("agent_id", "persona")]
        number, by = b.exact_rounds[-1], cfg.game.group_by or columns[0]
        typer.echo(f"exact distributions kept for rounds {b.exact_rounds}; round {number} by {by}:")
        typer.echo(b.exact(number).groups(by).to_string(index=False, float_format="{:.2f}".format))


@bundles_app.command("verify")
def bundles_verify(bundle: Annotated[Path, typer.Argument(help="bundle directory")]) -> None:
    """Recompute hashes and round statistics; exit 1 when anything differs."""
    from workbench.results import verify_bundle

    report = verify_bundle(bundle)
    typer.echo(str(report))  # the verdict, then each problem once
    raise typer.Exit(0 if report.ok else 1)


@bundles_app.command("reproduce")
def bundles_reproduce(
    bundle: Annotated[Path, typer.Argument(help="bundle directory")],
    rounds: Annotated[
        int | None, typer.Option(help="reproduce the first K rounds only (default: all)")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="where the new bundle goes (default: beside BUNDLE)")
    ] = None,
    allow_key_env: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-key-env",
            metavar="VAR=HOST[,HOST...]",
            help="an API key variable a served model's config may send, and the hosts it may "
            "go to (repeat for several); a bundle alone never chooses where a secret goes",
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
) -> None:
    """Run BUNDLE's config again with its seed into a new bundle and compare the two answer by
    answer; name the cause of any difference. Exit 0 only when every answer is identical."""
    from workbench.experiment import reproduce

    result = reproduce(
        bundle, rounds=rounds, allow_key_env=allow_key_env or (), out_dir=out, progress=progress
    )
    typer.echo(str(result))  # both paths, the round table, then the one verdict line
    raise typer.Exit(0 if result.identical else 1)
