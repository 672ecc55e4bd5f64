"""The workbench's version: one value, read from the installed package's metadata.

Read on first use (`version()`, or the module attribute `__version__`): importing
`importlib.metadata` costs tens of milliseconds that `workbench --help` need not pay.
"""

from __future__ import annotations

from functools import cache

DISTRIBUTION = "agent-sim-workbench"
"""The name the package is installed under (pyproject's project.name)."""


@cache
def version() -> str:
    """The installed version ("0+unknown" in a source tree that was never installed)."""
    import importlib.metadata

    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> str:
    if name == "__version__":
        return version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
