"""population/ is a pure floor: no import circles inside it, nothing above config.

Read from the source with `ast` (every import, also those inside functions), so the check needs
no import of the package and catches lazy imports too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "workbench" / "population"
PREFIX = "workbench.population"

# What population may import from the workbench: the floors below it.
BELOW = ("workbench.config", "workbench.errors", "workbench._files", PREFIX)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, *, names: bool = True) -> set[str]:
    """Every workbench module `path` imports, at any depth; with `names`, `from a import b`
    counts a.b too (b may be a submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if names:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "workbench"}


def _graph() -> dict[str, set[str]]:
    """Module -> the population modules it imports (submodule names that exist only)."""
    modules = {_module_name(p): p for p in PACKAGE.glob("*.py")}
    return {
        name: {m for m in _imports(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def test_no_population_module_imports_one_that_imports_it_back() -> None:
    graph = _graph()
    # the package face imports its submodules; a submodule importing the face would be a circle
    # only in name (the face's names come from the submodules), so look at submodules only
    inner = {m: {d for d in deps if d != PREFIX} for m, deps in graph.items() if m != PREFIX}
    assert inner[f"{PREFIX}.sample"] >= {f"{PREFIX}.shares", f"{PREFIX}.personas"}
    assert f"{PREFIX}.shares" in inner[f"{PREFIX}.personas"]

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(inner[start])
        while todo:
            module = todo.pop()
            if module not in seen:
                seen.add(module)
                todo.extend(inner.get(module, ()))
        return seen

    circles = sorted(module for module in inner if module in reach(module))
    assert circles == [], f"import circles through {circles}"
    assert all(PREFIX not in deps for deps in inner.values()), "a submodule imports the face"


def test_population_imports_only_config_and_below() -> None:
    upward = sorted(
        (_module_name(path), name)
        for path in PACKAGE.glob("*.py")
        for name in _imports(path, names=False)
        if not name.startswith(BELOW)
    )
    assert upward == [], f"population imports above its floor: {upward}"
