"""The notebooks under nbval: their cells marked `notebook` and `slow` when notebooks/ is run
alone (tests/conftest.py does it when the whole suite is collected: see tests/tiers.py), and
each notebook that ran whole kept with its outputs for the docs site.

nbval executes every code cell and keeps what it printed and drew (`IPyNbCell.test_outputs`)
but writes nothing back. Here each cell's outputs go into the notebook nbval read, and a
notebook whose every cell passed is written to `EXECUTED` (under the gitignored `build/`), so
the docs build that follows a test run (`.ci/run`) renders the tutorials with their figures
rather than as stored, and never executes them a second time. The committed notebooks stay
without outputs (tests/test_notebooks.py).
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tiers import mark_tiers

EXECUTED = Path(__file__).resolve().parent.parent / "build" / "executed-notebooks"
"""Where a notebook that ran whole under nbval is written with its outputs (docs/_ext reads it)."""

_FAILED: set[str] = set()
"""The notebooks (by path) one of whose cells failed or was skipped in this session."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_tiers(items)


def _notebook(item: pytest.Item) -> Any | None:
    """The nbformat notebook an nbval cell item belongs to (None for any other item)."""
    return getattr(item.parent, "nb", None) if hasattr(item, "test_outputs") else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Record each nbval cell's outputs into its notebook, and which notebooks failed."""
    outcome = yield
    notebook = _notebook(item)
    if notebook is None:
        return
    report = outcome.get_result()
    if report.failed or report.skipped:
        _FAILED.add(str(item.path))
    if call.when == "call" and item.test_outputs is not None:
        cell = item.cell
        cell.outputs = [nbformat.from_dict(dict(out)) for out in item.test_outputs]
        cell.execution_count = item.cell_num + 1


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a notebook's last cell: write it with its outputs, when every cell passed."""
    notebook = _notebook(item)
    if notebook is None or (nextitem is not None and nextitem.parent is item.parent):
        return
    cells = [c for c in notebook.cells if c.cell_type == "code"]
    ran_all = all(c.get("execution_count") is not None for c in cells)
    target = EXECUTED / item.path.name
    if str(item.path) in _FAILED or not ran_all:
        target.unlink(missing_ok=True)  # never render an older run's outputs as this one's
        return
    EXECUTED.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".ipynb.part")
    nbformat.write(notebook, partial)
    partial.replace(target)
