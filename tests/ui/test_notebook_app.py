"""The notebook that uses the magics and the components executes headlessly with nbclient
(the way papermill and CI run notebooks), with no error output in any cell."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "08-workbench-in-jupyter.ipynb"

pytestmark = pytest.mark.slow


def test_the_workbench_notebook_runs_headless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    for cell in notebook.cells:  # run in tmp_path: the population path made absolute
        cell.source = cell.source.replace("../workbench/", f"{REPO}/workbench/")
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the kernel's environment
    NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert [o for o in outputs if o.output_type == "error"] == []
    said = [str(o.get("data", {}).get("text/plain", "")) for o in outputs]
    assert any(s.startswith("ConfigError: ") for s in said)  # the broken config's one line
    assert (tmp_path / "results" / "08-workbench-in-jupyter" / ".launches").is_dir()
