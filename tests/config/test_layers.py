"""`workbench.config` stays light: its modules import no heavy library and nothing above it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import workbench.config

PACKAGE = Path(workbench.config.__file__).parent
HEAVY = ("pandas", "pyarrow", "numpy", "ray", "llama_cpp", "panel", "vllm", "openai", "httpx")
ALLOWED_WORKBENCH = ("workbench.errors", "workbench._files", "workbench.config")
"""What config may import from the workbench (config/ -> errors, _files: the layers in
docs/design/architecture.md)."""

MODULES = sorted(PACKAGE.glob("*.py"))


def imported_modules(path: Path) -> list[str]:
    """Every module an `import` or `from ... import` statement in the file names."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_config_modules_import_nothing_heavy_and_nothing_above(path: Path) -> None:
    names = imported_modules(path)
    heavy = [n for n in names if n.split(".")[0] in HEAVY]
    above = [n for n in names if n.startswith("workbench") and not n.startswith(ALLOWED_WORKBENCH)]
    assert not heavy, f"{path.name} imports {heavy}"
    assert not above, f"{path.name} imports {above}, a layer above config"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_config_modules_stay_small(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) < 600


def _heavy_after(statement: str) -> list[str]:
    """The heavy top-level packages in sys.modules after running `statement` in a fresh python."""
    report = "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{statement}\n{report}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    return [name for name in HEAVY if name in out]


def test_config_own_import_closure_is_light() -> None:
    """With the package face bypassed, importing config pulls in no heavy library."""
    bypass_face = (
        "import types\n"
        "face = types.ModuleType('workbench')\n"
        f"face.__path__ = [{str(PACKAGE.parent)!r}]\n"
        "sys.modules['workbench'] = face\n"
        "import workbench.config"
    )
    assert _heavy_after(bypass_face) == []


def test_importing_config_loads_no_heavy_library() -> None:
    """Through the package face too: the face is lazy (PEP 562), so neither `import workbench`
    nor `import workbench.config` loads a heavy library; a face that turns eager fails here."""
    assert _heavy_after("import workbench") == [], "the package face imports it eagerly"
    assert _heavy_after("import workbench.config") == []
