"""The populations a page can start from: the workspace's saved population files and the
packaged examples, found without Panel, so the Run tab can offer them beside the one it plays.

A saved population is a `.yaml`/`.yml` file, in the workspace or one folder down (dot folders
and result bundles left out), whose top level holds `dimensions`: what the Population tab's
Save writes. Files are read with the workbench's safe loader, at most `MAX_FILES` of them and
none larger than `MAX_BYTES`, so a big folder cannot stall the page.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from workbench._examples import examples_dir
from workbench.config import read_yaml
from workbench.errors import WorkbenchError
from workbench.ui.workspace import YAML_SUFFIXES

__all__ = ["EXAMPLE_PREFIX", "saved_populations"]

EXAMPLE_PREFIX = "example: "
"""How a packaged example population is labelled among the saved ones."""

MAX_FILES = 200
"""YAML files looked at, at most."""
MAX_BYTES = 1 << 20
"""A population file larger than this is not offered."""


def _yaml_files(root: Path) -> Iterator[Path]:
    """YAML files in `root` and its folders one level down, dot folders left out."""
    if not root.is_dir():
        return
    folders = [
        root,
        *sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")),
    ]
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if path.suffix in YAML_SUFFIXES and path.is_file() and not path.name.startswith("."):
                yield path


def _is_population(path: Path) -> bool:
    """Whether `path` holds a population spec (a mapping with `dimensions`)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return False
        data = read_yaml(path)
    except (OSError, WorkbenchError):
        return False
    return isinstance(data, dict) and "dimensions" in data


def saved_populations(workspace: str | Path | None) -> dict[str, Path]:
    """{label: file} of the populations to offer: the workspace's own (labelled by their path
    inside it), then the packaged examples (`EXAMPLE_PREFIX` + name)."""
    found: dict[str, Path] = {}
    if workspace is not None:
        root = Path(workspace).resolve()
        for index, path in enumerate(_yaml_files(root)):
            if index >= MAX_FILES:
                break
            resolved = path.resolve()
            if resolved.is_relative_to(root) and _is_population(resolved):
                found[path.relative_to(root).as_posix()] = resolved
    for path in sorted((examples_dir() / "personas").glob("*.yaml")):
        found[EXAMPLE_PREFIX + path.stem] = path
    return found
