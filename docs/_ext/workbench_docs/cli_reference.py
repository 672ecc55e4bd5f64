"""The CLI reference, generated from the `workbench` command's own help.

Walks the click command tree typer builds from `workbench.cli.app` and prints every command's
help as `workbench CMD --help` prints it (at 100 columns), so the page cannot say anything the
command does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import click
import typer

from workbench.cli import app

Warn = Callable[[str], None]
WIDTH = 100


def commands(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None = None
) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command under `command`, depth first, each with a context for its help."""
    ctx = click.Context(
        command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name), ctx)


def page(warn: Warn) -> str:
    """The CLI reference page, in MyST Markdown."""
    root = typer.main.get_command(app)
    lines = [
        "# Command line reference",
        "",
        "Every `workbench` command with its help, generated from the command itself when the",
        "docs are built (`workbench CMD --help` prints the same). The",
        "[CLI guide](../../guides/cli.md) shows them at work.",
        "",
    ]
    for path, command, ctx in commands(root, ("workbench",)):
        if not (command.help or "").strip() and len(path) > 1:
            warn(f"command {' '.join(path)} has no help text")
        depth = min(len(path), 3)
        title = " ".join(path)
        lines += [f"{'#' * (depth + 1)} `{title}`", "", "```text", command.get_help(ctx).rstrip(),
                  "```", ""]
    return "\n".join(lines)
