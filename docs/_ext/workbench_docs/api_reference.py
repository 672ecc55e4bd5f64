"""The package face's table: every name `import workbench as wb` gives, and where it lives."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import workbench

Warn = Callable[[str], None]


def page(warn: Warn) -> str:
    """A table of `workbench.__all__`: name, kind, defining module, first docstring line."""
    lines = ["| name | kind | defined in | what it is |", "|---|---|---|---|"]
    for name in sorted(workbench.__all__, key=str.lower):
        obj = getattr(workbench, name)
        if name == "__version__":
            lines.append(f"| `{name}` | str | `workbench._version` | the version, `{obj}` |")
            continue
        kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "value"
        module = getattr(obj, "__module__", "")
        doc = inspect.getdoc(obj) or ""
        first = " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")
        if not first:
            warn(f"workbench.{name} has no docstring")
        lines.append(f"| `{name}` | {kind} | `{module}` | {first} |")
    lines.append("")
    return "\n".join(lines)
