"""The CLI reference, generated from the `workbench` command's own help.

Walks the click command tree typer builds from `workbench.cli.app` and prints every command's
help as `workbench CMD --help` prints it (at 100 columns), so the page cannot say anything the
command does not.

typer may ship its own copy of click (`typer._click`), whose classes are not `click`'s: the walk
asks each command for what a group has (`list_commands`, `get_command`) and makes each context
with the command's own `context_class`, so it never depends on which click built the tree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import typer

from workbench.cli import app

Warn = Callable[[str], None]
WIDTH = 100
TITLE = "# Command line reference"


def is_group(command: Any) -> bool:
    """Whether `command` has subcommands (a click or typer-vendored click group)."""
    return callable(getattr(command, "list_commands", None)) and callable(
        getattr(command, "get_command", None)
    )


def commands(
    command: Any, path: tuple[str, ...], parent: Any | None = None
) -> Iterator[tuple[tuple[str, ...], Any, Any]]:
    """Every visible command under `command`, depth first, each with a context for its help."""
    ctx = command.context_class(
        command, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH
    )
    yield path, command, ctx
    if is_group(command):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from commands(sub, (*path, name), ctx)


def registered(typer_app: typer.Typer, prefix: str = "workbench") -> list[str]:
    """Every visible command registered on `typer_app` and its sub-apps, as typed
    (`workbench bundles show`), read from typer's own registry rather than the click tree:
    what the page must hold."""
    found = []
    for info in typer_app.registered_commands:
        if info.hidden is not True and info.callback is not None:
            name = info.name or typer.main.get_command_name(info.callback.__name__)
            found.append(f"{prefix} {name}")
    for group in typer_app.registered_groups:
        if group.hidden is not True and group.typer_instance is not None:
            name = group.name if isinstance(group.name, str) else group.typer_instance.info.name
            found.append(f"{prefix} {name}")
            found += registered(group.typer_instance, f"{prefix} {name}")
    return found


def heading(path: tuple[str, ...]) -> str:
    """The page's heading of the command at `path` (`## \\`workbench run\\``)."""
    return f"{'#' * (min(len(path), 3) + 1)} `{' '.join(path)}`"


def page(warn: Warn) -> str:
    """The CLI reference page, in MyST Markdown."""
    root = typer.main.get_command(app)
    lines = [
        TITLE,
        "",
        "Every `workbench` command with its help, generated from the command itself when the",
        "docs are built (`workbench CMD --help` prints the same). The",
        "[CLI guide](../../guides/cli.md) shows them at work.",
        "",
    ]
    walked = list(commands(root, ("workbench",)))
    on_page = {" ".join(path) for path, _, _ in walked}
    missing = sorted({"workbench", *registered(app)} - on_page)
    if missing:
        warn(f"the walk of the click tree missed {', '.join(missing)}: the page would lack them")
    for path, command, ctx in walked:
        if not (command.help or "").strip() and len(path) > 1:
            warn(f"command {' '.join(path)} has no help text")
        lines += [heading(path), "", "```text", command.get_help(ctx).rstrip(), "```", ""]
    return "\n".join(lines)
