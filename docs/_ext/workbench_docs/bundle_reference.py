"""The bundle format, generated from `workbench/results/layout.py`.

The layout module is the one place that spells a bundle's file names, statuses, manifest keys
and table schemas; this page lists its constants with their own docstrings (read from the
module's source, where Python keeps no attribute docstrings) and every Arrow schema column by
column.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from workbench.results import layout

Warn = Callable[[str], None]

EXAMPLES = {
    layout.RESPONSES_DIR: lambda: [layout.part_path(".", 1, 0)],
    layout.EXACT_DIR: lambda: list(layout.exact_paths(".", 1)),
}
"""A folder's files, shown by example (round 1, shard 0) from layout.py's own path functions."""


def attribute_docs(owner: object) -> dict[str, str]:
    """A module's constants (or a class's attributes) -> the string literal under each
    assignment (its docstring)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(owner))).body  # type: ignore[arg-type]
    if len(body) == 1 and isinstance(body[0], ast.ClassDef):
        body = body[0].body
    docs: dict[str, str] = {}
    for node, after in zip(body, body[1:], strict=False):
        targets = []
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        if (
            targets
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            for name in targets:
                docs[name] = " ".join(after.value.value.split())
    return docs


def _public_constants() -> list[tuple[str, object]]:
    return [
        (name, value)
        for name, value in vars(layout).items()
        if name.isupper() and not name.startswith("_")
    ]


def files() -> list[tuple[str, str]]:
    """The bundle's files and folders: (constant, name) of every layout constant that names one."""
    return [
        (name, value)
        for name, value in _public_constants()
        if isinstance(value, str)
        and (name.endswith(("_FILE", "_DIR")) or name in ("MANIFEST", "LOCK_FILE"))
    ]


def layout_table(warn: Warn) -> str:
    """A bundle's files and folders, each with its constant and its docstring in layout.py: the
    table the bundles design page and the format reference both show."""
    docs = attribute_docs(layout)
    lines = ["| path | constant | what it holds |", "|---|---|---|"]
    for name, value in files():
        meaning = docs.get(name, "")
        if not meaning:
            warn(f"layout.{name} ({value!r}) has no docstring")
        paths = [f"`{value}/`" if name.endswith("_DIR") else f"`{value}`"]
        paths += [f"`{Path(p).as_posix()}`" for p in EXAMPLES.get(value, list)()]
        lines.append(f"| {', '.join(paths)} | `{name}` | {meaning} |")
    lines += [
        "",
        "Every file is Parquet, JSON, JSON lines or YAML; a round's responses are the part files",
        'of its shards, and `pd.read_parquet("<bundle>/responses")` reads them all.',
        "",
    ]
    return "\n".join(lines)


def page(warn: Warn) -> str:
    """The bundle format page, in MyST Markdown."""
    docs = attribute_docs(layout)
    constants = _public_constants()
    module_doc = " ".join((layout.__doc__ or "").split("\n\n")[0].split())
    lines = [
        "# Bundle format",
        "",
        f"Generated from `workbench/results/layout.py` (schema version {layout.SCHEMA_VERSION})"
        " when the docs are built. " + module_doc,
        "The [bundles design page](../../design/bundles.md) says how a bundle is written,",
        "read and verified.",
        "",
        "## Files and folders",
        "",
        "```{include} parts/bundle-layout.md",
        "```",
        "",
        "## Values",
        "",
        "| constant | value | meaning |",
        "|---|---|---|",
    ]
    for name, value in constants:
        if isinstance(value, (tuple, int)) and not isinstance(value, bool):
            text = ", ".join(f"`{v}`" for v in value) if isinstance(value, tuple) else f"`{value}`"
            lines.append(f"| `{name}` | {text} | {docs.get(name, '')} |")
        elif hasattr(value, "pattern") and not isinstance(value, str):
            lines.append(f"| `{name}` | `{value.pattern}` | {docs.get(name, '')} |")
    for name, value in constants:
        if isinstance(value, pa.Schema):
            lines += [
                "",
                f"## `{name}`",
                "",
                docs.get(name, ""),
                "",
                "| column | Arrow type |",
                "|---|---|",
            ]
            lines += [f"| `{f.name}` | `{f.type}` |" for f in value]
    lines.append("")
    return "\n".join(lines)
