"""The workbench's version: one value, read from the installed package's metadata."""

from __future__ import annotations

import importlib.metadata

DISTRIBUTION = "agent-sim-workbench"
"""The name the package is installed under (pyproject's project.name)."""


def _read() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


__version__: str = _read()
