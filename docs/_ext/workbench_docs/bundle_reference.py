"""The bundle format, generated from `workbench/results/layout.py`.

The layout module is the one place that spells a bundle's file names, statuses, manifest keys
and table schemas; this page lists its constants with their own docstrings (read from the
module's source, where Python keeps no attribute docstrings) and every Arrow schema column by
column.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable

import pyarrow as pa

from workbench.results import layout

Warn = Callable[[str], None]

FILES: dict[str, str] = {
    "MANIFEST": "status, resolved config, seeds, versions, model identity, host, per-round "
    "timings, the error of a failed run, and rows + sha256 of every data file",
    "CONFIG_FILE": "the resolved config: `workbench run <bundle>/config.yaml` reruns it",
    "PERSONAS_FILE": "one row per agent: `agent_id`, its attribute columns, its persona text",
    "ROUNDS_FILE": "one row per round: the round's statistics (`ROUND_SCHEMA` below)",
    "GROUPS_FILE": "the same statistics per round and group (only with `game.group_by`)",
    "EVENTS_FILE": "the run's events, one JSON object a line, appended as they happen",
    "RESPONSES_DIR": "`round-<k>/part-<shard>.parquet`: every agent's answer (`RESPONSE_SCHEMA`)",
    "FIGURES_DIR": "figures saved with `viz.save_figure` (PNG and PDF; derived views, not data)",
}
"""What a file holds, where layout.py's constant has no docstring of its own."""


def attribute_docs(module: object) -> dict[str, str]:
    """Module constant -> the string literal under its assignment (its docstring)."""
    tree = ast.parse(inspect.getsource(module))
    docs: dict[str, str] = {}
    body = tree.body
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
        "| constant | name | what it holds |",
        "|---|---|---|",
    ]
    for name, value in constants:
        if isinstance(value, str) and name.endswith(("_FILE", "_DIR")) or name in (
            "MANIFEST",
            "LOCK_FILE",
        ):
            meaning = docs.get(name) or FILES.get(name)
            if not meaning:
                warn(f"layout.{name} ({value!r}) has no docstring and no description here")
            lines.append(f"| `{name}` | `{value}` | {meaning or ''} |")
    lines += [
        "",
        "A round's responses are written by each shard as its own part file:",
        f"`{layout.part_path('<bundle>', 1, 0).as_posix().replace('<bundle>/', '')}` is shard 0"
        " of round 1 (`part_path`); `exact/round-<k>/prompts.parquet` and `agents.parquet` hold"
        " a round's exact distributions (`exact_paths`).",
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
            lines += ["", f"## `{name}`", "", docs.get(name, ""), "",
                      "| column | Arrow type |", "|---|---|"]
            lines += [f"| `{f.name}` | `{f.type}` |" for f in value]
    lines.append("")
    return "\n".join(lines)
