"""The errors page, generated from `workbench/errors.py`: the exception tree drawn from the
classes themselves, the module's rule for which to raise, and each class with its docstring and
the `workbench` command's exit status for it."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from workbench import errors
from workbench_docs.bundle_reference import attribute_docs

Warn = Callable[[str], None]
TITLE = "# Errors"


def classes() -> list[type[BaseException]]:
    """Every exception class `errors.py` defines, in the order it defines them."""
    found = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    ]
    return sorted(found, key=lambda cls: inspect.getsourcelines(cls)[1])


def tree(found: list[type[BaseException]]) -> list[str]:
    """The classes as an indented tree under their parents (those defined here)."""
    lines: list[str] = []

    def add(cls: type[BaseException], depth: int) -> None:
        lines.append(f"{'    ' * depth}{cls.__name__}")
        for child in found:
            if cls in child.__bases__:
                add(child, depth + 1)

    for cls in found:
        if not any(base in found for base in cls.__bases__):
            add(cls, 0)
    return lines


def rule() -> list[str]:
    """The module docstring's prose, without its hand-drawn tree (the indented paragraph)."""
    paragraphs = inspect.cleandoc(errors.__doc__ or "").split("\n\n")
    return [p for p in paragraphs[1:] if not p.startswith(" ")]


def parents(cls: type[BaseException]) -> str:
    """A class's bases as the page names them."""
    return ", ".join(f"`{base.__name__}`" for base in cls.__bases__)


def page(warn: Warn) -> str:
    """The errors page, in MyST Markdown."""
    found = classes()
    summary = " ".join(inspect.cleandoc(errors.__doc__ or "").split("\n\n")[0].split())
    lines = [
        TITLE,
        "",
        f"Generated from `workbench/errors.py` when the docs are built. {summary}",
        "",
        "```text",
        *tree(found),
        "```",
        "",
    ]
    for paragraph in rule():
        lines += [paragraph, ""]
    docs = attribute_docs(errors)
    constants = [(n, v) for n, v in vars(errors).items() if n.isupper() and n in docs]
    if constants:
        lines += ["| constant | value | meaning |", "|---|---|---|"]
        lines += [f"| `{name}` | `{value!r}` | {docs[name]} |" for name, value in constants]
        lines.append("")
    for cls in found:
        doc = inspect.getdoc(cls) if "__doc__" in vars(cls) else None
        if not doc:
            warn(f"errors.{cls.__name__} has no docstring of its own")
        status = getattr(cls, "exit_status", None)
        facts = [f"a subclass of {parents(cls)}"]
        if status is not None:
            facts.append(f"exit status {status} (`exit_status`)")
        lines += [f"## `{cls.__name__}`", "", "; ".join(facts) + ".", "", doc or "", ""]
        own = attribute_docs(cls)
        lines += [f"- `{name}`: {text}" for name, text in own.items()]
        lines += [""] if own else []
    return "\n".join(lines)
