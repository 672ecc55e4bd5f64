"""The tutorials: the repository's notebooks, copied into the docs source with the outputs of
the test suite's run of them where there is one (`.ci/run` runs the suite before the docs).

nbval executes every notebook, and notebooks/conftest.py writes each one that ran whole, with
its outputs, to `build/executed-notebooks/`. A copy there is used only while its cells are the
stored notebook's cells (the same sources, in order): a notebook edited since its run is
rendered as stored, without outputs, rather than with outputs from other code. The docs build
never executes a notebook itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

EXECUTED = Path("build", "executed-notebooks")
"""Where notebooks/conftest.py writes each notebook that ran whole, relative to the repository
root (tests/test_docs.py fails when the two part ways)."""


def _sources(notebook: dict[str, Any]) -> list[tuple[str, str]]:
    """Each cell's type and source: what must match for a run's outputs to belong to it."""
    cells = notebook.get("cells", [])
    return [(c.get("cell_type", ""), "".join(c.get("source", ""))) for c in cells]


def rendered_from(stored: Path, executed: Path) -> Path:
    """The file to render for the notebook `stored`: its executed copy in `executed` when
    that holds the same cells, else the stored notebook itself."""
    run = executed / stored.name
    if not run.is_file():
        return stored
    try:
        ran = json.loads(run.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return stored
    same = _sources(ran) == _sources(json.loads(stored.read_text(encoding="utf-8")))
    return run if same else stored


def copy_notebooks(source: Path, target: Path, executed: Path) -> dict[str, bool]:
    """Copy every `source/*.ipynb` into `target` (only those whose bytes changed), each from
    its executed copy in `executed` where that matches (`rendered_from`), and remove copies
    whose notebook is gone. Returns, per notebook name, whether it has outputs."""
    target.mkdir(parents=True, exist_ok=True)
    wanted = sorted(source.glob("*.ipynb"))
    names = {path.name for path in wanted}
    for stale in target.glob("*.ipynb"):
        if stale.name not in names:
            stale.unlink()
    with_outputs = {}
    for path in wanted:
        origin = rendered_from(path, executed)
        with_outputs[path.name] = origin != path
        copy = target / path.name
        data = origin.read_bytes()
        if not copy.exists() or copy.read_bytes() != data:
            copy.write_bytes(data)
    return with_outputs
