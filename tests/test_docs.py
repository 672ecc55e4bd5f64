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
