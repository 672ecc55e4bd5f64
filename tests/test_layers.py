"""The house's structure as a contract: the layers of docs/design/architecture.md
(import-linter), small modules, and a package face that stays cheap to import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 1000
"""A module past 600 lines is split where it has a seam; past this it fails."""


def test_imports_point_down_the_layers_of_design_md() -> None:
    """`lint-imports` with pyproject's contracts: layers, and pure floors free of Ray/Panel/HTTP."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe is not None, "import-linter is a dev dependency: run `bash .ci/setup`"
    result = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken." in result.stdout, result.stdout[-2000:]


def test_ruff_finds_nothing_in_the_code_tests_and_notebooks() -> None:
    """`ruff check .` with pyproject's rules, notebooks included (names a cell magic sets are
    the one exception, declared in pyproject)."""
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert exe is not None, "ruff is a dev dependency: run `bash .ci/setup`"
    result = subprocess.run(
        [exe, "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_no_module_is_over_1000_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in (ROOT / "workbench").rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


@pytest.mark.parametrize(
    "code",
    [
        "import workbench",
        "import workbench.config",
        "import workbench.cli",
        "import workbench.errors",
        "import workbench.runtime.events",  # a follower of a run's events stays light
    ],
)
def test_the_package_face_loads_no_heavy_library(code: str) -> None:
    from workbench.bench.startup import heavy_modules_loaded

    assert heavy_modules_loaded(code) == []


def test_the_lazy_face_still_gives_every_public_name() -> None:
    import workbench

    for name in workbench.__all__:
        assert getattr(workbench, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        workbench.nope  # noqa: B018
