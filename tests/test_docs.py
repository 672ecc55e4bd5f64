"""The docs site's sources stay true to the code: every environment variable the package uses
is described, the README stays a front page whose links land, and CI builds the site."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _env_reference():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from workbench_docs import env_reference
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    return env_reference


def test_every_environment_variable_the_code_uses_is_described() -> None:
    env = _env_reference()
    used_not_described, described_not_used = env.drift()
    assert used_not_described == [], "describe them in docs/_ext/workbench_docs/env_reference.py"
    assert described_not_used == [], "the code no longer uses them: remove their descriptions"
    # the scan finds literals, module constants, typer envvars and names a loop walks
    found = env.found()
    for name in ("WORKBENCH_TOKEN", "RAY_AUTH_TOKEN", "JUPYTER_TOKEN", "WORKBENCH_KEY_POLICY"):
        assert name in found


def test_readme_is_a_front_page_whose_links_land() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    # the two commands, exactly as CI and users run them
    assert "bash .ci/setup && .venv/bin/workbench run workbench/examples/million.yaml" in readme
    assert "bash .ci/setup && .venv/bin/python -m pytest" in readme
    links = re.findall(r"\]\(((?:docs|notebooks)/[^)#\s]+)", readme)
    assert links, "the README links into docs/"
    for link in links:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_ci_builds_the_docs_with_warnings_as_errors() -> None:
    script = (ROOT / ".ci" / "docs").read_text()
    assert "sphinx-build -W --keep-going" in script
    assert "bash .ci/docs" in (ROOT / ".ci" / "run").read_text()


def _notebook(path: Path, *sources: str) -> Path:
    import nbformat

    cells = [nbformat.v4.new_markdown_cell("# a tutorial")]
    cells += [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_the_tutorials_show_the_outputs_of_the_test_runs_notebooks(tmp_path: Path) -> None:
    """notebooks/conftest.py keeps each notebook that ran whole under nbval with its outputs;
    the docs build renders that copy while its cells are the stored notebook's, and never the
    outputs of a failed run or of other code."""
    import subprocess

    import nbformat

    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from workbench_docs.notebooks import EXECUTED, copy_notebooks, rendered_from
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "conftest.py").write_text((ROOT / "notebooks" / "conftest.py").read_text())
    good = _notebook(folder / "good.ipynb", "print('hello from nbval')", "6 * 7")
    bad = _notebook(folder / "bad.ipynb", "print('first')", "1 / 0")
    executed = tmp_path / EXECUTED  # where the docs look: the conftest must write there
    executed.mkdir(parents=True)
    (executed / "bad.ipynb").write_text("{}")  # an older run's copy: must not outlive this one
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
         str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(folder)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-2000:]  # bad's second cell fails
    assert sorted(p.name for p in executed.iterdir()) == ["good.ipynb"]
    kept = nbformat.read(executed / "good.ipynb", as_version=4)
    nbformat.validate(kept)
    printed, result = (cell.outputs for cell in kept.cells if cell.cell_type == "code")
    assert printed[0]["text"] == "hello from nbval\n"
    assert result[0]["data"]["text/plain"] == "42"

    assert rendered_from(good, executed) == executed / "good.ipynb"
    assert rendered_from(bad, executed) == bad  # its run failed: shown as stored
    site = tmp_path / "site"
    assert copy_notebooks(folder, site, executed) == {"bad.ipynb": False, "good.ipynb": True}
    assert (site / "good.ipynb").read_bytes() == (executed / "good.ipynb").read_bytes()
    _notebook(good, "print('edited since its run')", "6 * 7")
    assert rendered_from(good, executed) == good  # other code: never its old outputs
