"""`workbench bundles list|show|compare|verify|reproduce|export`: result bundles from the shell.
Registered on the app in `cli.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workbench._files import RESULTS_DEFAULT, results_dir
from workbench.cli_tables import (
    PLAIN,
    RoundTable,
    as_written,
    bar_wanted,
    engine_work_text,
    fork_note,
    invariance_note,
    number,
    text_table,
)
from workbench.results.round_table import MORE_STATISTICS, ROUND_TABLE

bundles_app = typer.Typer(
    help="List, show, compare, verify, reproduce and export result bundles.",
    no_args_is_help=True,
    **PLAIN,
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
    typer.echo(rounds.to_string(float_format=number) if len(rounds) else "no rounds")


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
        text_table(frame.fillna({"fork_of": "", "problem": ""}))
        if len(frame)
        else f"no bundles under {root}"
    )


@bundles_app.command("show")
def bundles_show(bundle: Annotated[Path, typer.Argument(help="bundle directory")]) -> None:
    """Show a bundle's status, model, config summary and round table, and the work per model
    engine when the run recorded it (a Ray run's model actors): per engine over the rounds, per
    round over the engines with the largest engine's share."""
    from workbench.results import Bundle
    from workbench.results.reproduction import build_reach
    from workbench.results.run_statuses import resume_hint

    b = Bundle.open(bundle)
    cfg = b.config
    game = cfg.game.as_written()
    typer.echo(f"run:     {b.run_id} ({b.status})")
    fork = fork_note(b.forked_from)
    if fork:
        typer.echo(f"fork:    {fork}")
    typer.echo(f"created: {b.created_at}  finished: {b.finished_at}")
    ratio, offset, low, high = (as_written(game[k]) for k in ("ratio", "offset", "low", "high"))
    typer.echo(
        f"game:    ratio={ratio} offset={offset} range=[{low}, {high}] "
        f"rounds={cfg.game.rounds} ({len(b.rounds_done)} done)"
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
    hint = resume_hint(b.status, b.error, b.path, resumable=b.resumable)
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
    work = engine_work_text(b.engine_work())
    if work is not None:
        typer.echo(work)
    if b.exact_rounds:  # output.exact_distributions: each group's exact mean beside its draws
        columns = [c for c in b.personas().columns if c not in ("agent_id", "persona")]
        number, by = b.exact_rounds[-1], cfg.game.group_by or columns[0]
        typer.echo(f"exact distributions kept for rounds {b.exact_rounds}; round {number} by {by}:")
        typer.echo(text_table(b.exact(number).groups(by)))


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
        bundle,
        rounds=rounds,
        allow_key_env=allow_key_env or (),
        out_dir=out,
        progress=bar_wanted(progress),
    )
    typer.echo(str(result))  # both paths, the round table, then the one verdict line
    raise typer.Exit(0 if result.identical else 1)


@bundles_app.command("export")
def bundles_export(
    bundle: Annotated[Path, typer.Argument(help="bundle directory")],
    out: Annotated[
        Path | None,
        typer.Option(help="the file written (default: <run id>-tidy.<format> in this folder)"),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="csv or parquet (default: --out's suffix, else csv)"),
    ] = None,
) -> None:
    """Write BUNDLE as one tidy table for R, Stata or pandas: one row per agent and finished
    round, with the persona columns (not the persona's prose) and the answer (guess, status,
    latency, tokens); a guess that is not a number is empty. Written a round at a time."""
    from workbench.errors import ConfigError
    from workbench.results import Bundle
    from workbench.results.export import EXPORT_FORMATS, export_tidy

    suffix = out.suffix[1:].lower() if out is not None else ""
    if fmt is not None and fmt not in EXPORT_FORMATS:
        raise ConfigError(
            f"--format: {fmt!r} is not an export format; one of {list(EXPORT_FORMATS)}"
        )
    if fmt is not None and suffix in EXPORT_FORMATS and suffix != fmt:
        raise ConfigError(f"--format {fmt} but --out ends in .{suffix}: make them agree")
    fmt = fmt or (suffix if suffix in EXPORT_FORMATS else "csv")
    b = Bundle.open(bundle)
    target = out if out is not None else Path(f"{b.run_id}-tidy.{fmt}")
    rows = export_tidy(b, target, fmt)
    rounds = b.rounds_count
    note = "" if b.is_complete else f"; {b.status}: its finished rounds only"
    typer.echo(f"wrote {rows:,} rows ({rounds} round{'s' * (rounds != 1)}{note}) to {target}")
