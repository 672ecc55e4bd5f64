"""The package, floor by floor and module by module, generated from the code.

The floors are the layers contract in `pyproject.toml` (the first import-linter contract whose
container is `workbench`), top first; each module is listed under the floor its top-level
package or module belongs to, with the first sentence of its own docstring. A module that is
added, renamed or moved appears by itself; one in no floor is listed apart, so the page shows
what the contract leaves out. Read with `ast`, so nothing is imported.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import workbench

Warn = Callable[[str], None]
PACKAGE = Path(workbench.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"
OUTSIDE = "outside the layers contract"
"""The group of the modules no floor of the contract names."""


def contracts(pyproject: Path = PYPROJECT) -> list[dict[str, Any]]:
    """The import-linter contracts `pyproject.toml` declares, in order."""
    return tomllib.loads(pyproject.read_text())["tool"]["importlinter"]["contracts"]


def is_floors(contract: dict[str, Any]) -> bool:
    """Whether a contract is the package's layers (a `layers` contract over `workbench`)."""
    return contract.get("type") == "layers" and contract.get("containers") == ["workbench"]


def floors(pyproject: Path = PYPROJECT) -> list[list[str]]:
    """The layers contract's floors, top first: each the names on its line (parentheses, which
    make a layer optional, and `|` separators dropped)."""
    for contract in contracts(pyproject):
        if is_floors(contract):
            return [re.findall(r"[\w.]+", line) for line in contract["layers"]]
    raise LookupError(f"{pyproject}: no layers contract over `workbench`")


def modules(package: Path = PACKAGE) -> list[str]:
    """Every module of the package, as its path below it (`llm/walk.py`; a package as its
    folder, `llm/`), sorted so a package comes before its modules."""
    found = []
    for path in package.rglob("*.py"):
        rel = path.relative_to(package)
        if "__pycache__" in rel.parts:
            continue
        found.append(f"{rel.parent.as_posix()}/" if rel.name == "__init__.py" else rel.as_posix())
    return sorted(name for name in found if name != "./")


def source(name: str, package: Path = PACKAGE) -> Path:
    """The file of a module named as `modules` names it."""
    return package / name / "__init__.py" if name.endswith("/") else package / name


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, on one line ('' when it has none)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    match = re.match(r"(.+?[.!?])(?:\s|$)", first)
    return (match.group(1) if match else first).replace("|", "\\|")


def top(name: str) -> str:
    """The top-level module or package a module belongs to (`llm` for `llm/distribution/`)."""
    return name.split("/")[0].removesuffix(".py")


def grouped(package: Path = PACKAGE, pyproject: Path = PYPROJECT) -> dict[str, list[str]]:
    """Each floor's line (`results | agents`) -> its modules in order; then `OUTSIDE`, where
    any module is in no floor."""
    groups: dict[str, list[str]] = {}
    placed: set[str] = set()
    names = modules(package)
    for floor in floors(pyproject):
        inside = [name for name in names if top(name) in floor]
        groups[" | ".join(floor)] = inside
        placed.update(inside)
    rest = [name for name in names if name not in placed]
    if rest:
        groups[OUTSIDE] = rest
    return groups


def floors_diagram(warn: Warn) -> str:
    """The floors as a text block, top first (the layers at a glance: imports point down), then
    the other contracts, each by its name."""
    rows = [" | ".join(floor) for floor in floors()]
    for floor in floors():
        for name in floor:
            if (
                not (PACKAGE / name / "__init__.py").exists()
                and not (PACKAGE / f"{name}.py").exists()
            ):
                warn(f"the layers contract names `{name}`, which is no module of workbench/")
    width = max(map(len, rows)) + 4
    marks = {0: "top", len(rows) - 1: "ground floor"}
    lines = ["```text"]
    lines += [f"{row:<{width}}{marks.get(i, '')}".rstrip() for i, row in enumerate(rows)]
    lines += ["```", "", "Besides the layers, `pyproject.toml` declares these contracts:", ""]
    lines += [f"- {c['name']} ({c['type']})" for c in contracts() if not is_floors(c)]
    lines.append("")
    return "\n".join(lines)


def page(warn: Warn) -> str:
    """The module tables, one per floor (top first), in MyST Markdown, for inclusion in the
    architecture page."""
    lines: list[str] = []
    for floor, names in grouped().items():
        title = floor if floor == OUTSIDE else f"`{floor}`"
        lines += [f"### {title}", "", "| module | holds |", "| --- | --- |"]
        for name in names:
            text = summary(source(name))
            if not text:
                warn(f"workbench/{name} has no docstring")
            lines.append(f"| `{name}` | {text} |")
        lines.append("")
    return "\n".join(lines)
