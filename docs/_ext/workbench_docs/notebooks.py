"""The tutorials: the repository's notebooks, copied into the docs source with their outputs.

The outputs come from `build/executed-notebooks/` (gitignored), where each notebook's executed
copy is kept. Two things write there: notebooks/conftest.py, for each notebook that ran whole
under nbval in the test suite (`.ci/run` runs the suite before the docs), and this build, for
each notebook that has no copy there matching its cells (`execute_missing`): it runs the
notebook in a fresh kernel of this Python, in the notebook's own folder as nbval and JupyterLab
do, at the notebook's own (small) default sizes. So a fresh `bash .ci/docs` shows every
tutorial with its figures, and after a test run, or a build before it, nothing runs twice.

A copy is used only while its cells are the stored notebook's cells (the same sources, in
order): a notebook edited since its run is run again rather than rendered with outputs from
other code. A notebook that fails to run is rendered as stored, and the failure is a warning
(so `.ci/docs`, warnings as errors, fails).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

EXECUTED = Path("build", "executed-notebooks")
"""Where executed notebooks are kept (by notebooks/conftest.py and by `execute_missing`),
relative to the repository root (tests/test_docs.py fails when the two part ways)."""

CELL_TIMEOUT_S = 1200
"""The longest one cell may run at docs time (the slowest notebook takes about 3 minutes)."""

THIS_PYTHON = "workbench-docs-this-python"
"""The kernel name that means "ipykernel in the Python running the build" (the venv's)."""

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""A terminal colour code, as IPython writes them into tracebacks."""


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


@cache
def _kernel_manager_class() -> type:
    """An async kernel manager whose kernel is ipykernel in this very Python (its executable),
    never a `python3` kernelspec installed elsewhere on the machine (as nbval's
    --nbval-current-env)."""
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisPython(KernelSpecManager):  # type: ignore[misc]
        def get_kernel_spec(self, kernel_name: str) -> Any:
            if kernel_name != THIS_PYTHON:
                return super().get_kernel_spec(kernel_name)
            spec = ipykernel.kernelspec.get_kernel_dict()  # argv: [sys.executable, "-m", ...]
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES, **spec)

    class ThisPythonKernels(AsyncKernelManager):  # type: ignore[misc]
        @default("kernel_spec_manager")
        def _kernel_spec_manager_default(self) -> KernelSpecManager:
            return ThisPython(data_dir=self.data_dir)

    return ThisPythonKernels


def execute(stored: Path, executed: Path, timeout_s: int = CELL_TIMEOUT_S) -> Path:
    """Run the notebook `stored` whole in a fresh kernel, in its own folder, and write it with
    its outputs to `executed/<name>` (whole or not at all). Raises nbclient's CellExecutionError
    (or a timeout) when a cell fails; nothing is written then, and an older copy is removed."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(stored, as_version=4)
    target = executed / stored.name
    client = NotebookClient(
        notebook,
        kernel_name=THIS_PYTHON,
        kernel_manager_class=_kernel_manager_class(),
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # not its loopback-TCP notice
        timeout=timeout_s,
        resources={"metadata": {"path": str(stored.parent)}},
    )
    try:
        client.execute()
    except BaseException:
        target.unlink(missing_ok=True)  # never render an older run's outputs as this one's
        raise
    executed.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".ipynb.part")
    nbformat.write(notebook, partial)
    partial.replace(target)
    return target


Say = Callable[[str], None]


def execute_missing(notebooks: Iterable[Path], executed: Path, log: Say, warn: Say) -> list[str]:
    """Execute each of `notebooks` whose executed copy is missing or holds other cells, one
    after another (`log` tells each start and its seconds, `warn` each failure). Returns the
    names executed whole."""
    ran = []
    for stored in notebooks:
        if rendered_from(stored, executed) != stored:
            continue
        log(f"executing {stored.name} (no executed copy with its cells in {executed})")
        start = time.monotonic()
        try:
            execute(stored, executed)
        except Exception as exc:  # a failed cell, a timeout, a kernel that died
            text = ANSI.sub("", str(exc))  # the traceback's colours
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            warn(f"{stored.name} failed to run, shown without outputs: {' / '.join(lines[-3:])}")
            continue
        log(f"executed {stored.name} in {time.monotonic() - start:.0f} s")
        ran.append(stored.name)
    return ran


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
