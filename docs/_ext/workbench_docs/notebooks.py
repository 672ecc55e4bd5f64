"""The tutorials: the repository's notebooks, copied into the docs source as they are stored."""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_notebooks(source: Path, target: Path) -> list[Path]:
    """Copy every `notebooks/*.ipynb` into `target` (only those whose bytes changed), and remove
    copies whose notebook is gone. The build renders them as stored and never executes them."""
    target.mkdir(parents=True, exist_ok=True)
    wanted = sorted(source.glob("*.ipynb"))
    names = {path.name for path in wanted}
    for stale in target.glob("*.ipynb"):
        if stale.name not in names:
            stale.unlink()
    for path in wanted:
        copy = target / path.name
        if not copy.exists() or copy.read_bytes() != path.read_bytes():
            shutil.copyfile(path, copy)
    return wanted
