"""Distribution mode's contract in the API reference: `NodeScorer` (and any base beside it), the
`Node` it scores, the `PromptGroup`, the walk and its one driver `draw_answers`, wherever in
`workbench/llm/distribution/` they are defined; every scorer of the package; and, as the
example of a scorer, the test suite's fixed-logit scorer, its source read from `tests/`.

The names are found with `ast` (nothing is imported to find them), so a module that is renamed
or split keeps its page; a name no longer found is a build warning.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import workbench

Warn = Callable[[str], None]
PACKAGE = Path(workbench.__file__).resolve().parent
HOME = PACKAGE / "llm" / "distribution"
TESTS = PACKAGE.parent / "tests"
BASE = "NodeScorer"
CONTRACT = ("Node", "PromptGroup", "walk", "draw_answers")
"""Documented after the scorer's bases, in this order."""
EXAMPLE = ("HashScorer", "logits")
"""The test scorer whose logits are a fixed function of the node, and the function it calls."""


def dotted(path: Path) -> str:
    """A module's dotted name from its file."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def definitions(folder: Path = HOME) -> dict[str, tuple[str, ast.stmt]]:
    """Every top-level class and function of a folder's modules: name -> (module, node)."""
    found: dict[str, tuple[str, ast.stmt]] = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                found[node.name] = (dotted(path), node)
    return found


def base_names(node: ast.ClassDef) -> list[str]:
    """The names a class statement gives as its bases (`NodeScorer`, `scorer.NodeScorer`)."""
    names = []
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.append(base.id)
        elif isinstance(base, ast.Attribute):
            names.append(base.attr)
    return names


def scorers(found: dict[str, tuple[str, ast.stmt]]) -> list[str]:
    """The classes of the package that are `NodeScorer`s (directly or through another), in
    the order found."""
    known = {BASE}
    grew = True
    while grew:
        grew = False
        for name, (_, node) in found.items():
            if name not in known and isinstance(node, ast.ClassDef):
                if known.intersection(base_names(node)):
                    known.add(name)
                    grew = True
    return [name for name in found if name in known and name != BASE]


def summary(node: ast.stmt) -> str:
    """The first paragraph of a class's or function's docstring, on one line."""
    assert isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
    doc = ast.get_docstring(node) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


def example(warn: Warn, tests: Path = TESTS) -> list[str]:
    """The example scorer's source, and the file it was found in."""
    for path in sorted(tests.rglob("*.py")):
        text = path.read_text()
        if f"class {EXAMPLE[0]}(" not in text:
            continue
        nodes = {
            n.name: n
            for n in ast.parse(text).body
            if isinstance(n, (ast.ClassDef, ast.FunctionDef))
        }
        missing = [name for name in EXAMPLE if name not in nodes]
        if missing:
            warn(f"{path.relative_to(tests.parent)} lacks {', '.join(missing)}")
        parts = [
            ast.get_source_segment(text, nodes[name]) or "" for name in EXAMPLE if name in nodes
        ]
        return [
            f"From `{path.relative_to(tests.parent).as_posix()}`, where the answer trie is tested",
            "against each agent's answer drawn alone:",
            "",
            "```python",
            "\n\n\n".join(parts),
            "```",
            "",
        ]
    warn(f"no test module defines {EXAMPLE[0]}, the documented example of a NodeScorer")
    return []


def page(warn: Warn) -> str:
    """The section of the `workbench.llm` API page on distribution mode, in MyST Markdown."""
    found = definitions()
    lines: list[str] = []
    if BASE not in found:
        warn(f"workbench/llm/distribution/ defines no {BASE}")
        return ""
    module = found[BASE][0]
    bases = [BASE] + [n for n in scorers(found) if found[n][0] == module]
    others = [n for n in scorers(found) if found[n][0] != module]
    lines += ["```{eval-rst}"]
    lines += [f".. autoclass:: {found[name][0]}.{name}" for name in bases]
    lines += ["```", "", "### A scorer, by example", ""]
    lines += example(warn)
    lines += ["### The scorers", "", "| scorer | module | what it scores |", "|---|---|---|"]
    lines += [f"| `{n}` | `{found[n][0]}` | {summary(found[n][1])} |" for n in others]
    lines += [
        "",
        "### What a scorer is asked: the groups, the nodes, the walk",
        "",
        "```{eval-rst}",
    ]
    for name in CONTRACT:
        if name not in found:
            warn(f"workbench/llm/distribution/ defines no {name}")
            continue
        where, node = found[name]
        kind = "autoclass" if isinstance(node, ast.ClassDef) else "autofunction"
        lines.append(f".. {kind}:: {where}.{name}")
    lines += ["```", ""]
    return "\n".join(lines)
