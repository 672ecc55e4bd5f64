"""Bad paths, hostile specs and damaged bundles at the command line: each gives one line naming
the field or file and the fix, exit status 2, and writes nothing.

The cases run concurrently as real `workbench` processes (each pays seconds of imports).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import TIMEOUT_S, assert_user_error, interruptible, run_all

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EDUCATION = ROOT / "personas" / "paper-education.yaml"


def files_under(path: Path) -> set[str]:
    """Every file and folder below `path`, relative, so a test can tell nothing was written."""
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def config_text(*lines: str, name: str = "edge", population: str | None = None) -> str:
    """A small run config; each of `lines` ("key: value") replaces the base line of its key."""
    base = {
        "name": f"name: {name}",
        "n_agents": "n_agents: 6",
        "population": f"population: {population or json.dumps(str(EDUCATION))}",
        "policy": "policy: {kind: random}",
    }
    base |= {line.split(":", 1)[0]: line for line in lines}
    return "\n".join(base.values()) + "\n"


def test_hostile_paths_and_specs_are_one_line_each_and_write_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "taken").write_text("a file, not a folder\n")
    (work / "cache-dir").mkdir()
    (work / "not-sqlite.db").write_text("plain text\n")
    deep = "a:\n" + "".join("  " * i + "  a:\n" for i in range(3000))
    configs = {
        "plain.yaml": config_text(),
        "long-name.yaml": config_text(name="n" * 240),
        "wide-range.yaml": config_text("game: {low: -1e308, high: 1e308}"),
        "cache-dir.yaml": config_text(
            "policy: {kind: llm}", "model: {cache: cache-dir}", name="cachedir"
        ),
        "cache-text.yaml": config_text(
            "policy: {kind: llm}", "model: {cache: not-sqlite.db}", name="cachetext"
        ),
        "cache-unreachable.yaml": config_text(
            "policy: {kind: llm}",
            "model: {kind: openai, base_urls: ['http://127.0.0.1:9/v1'], name: m,"
            " cache: new-cache.sqlite, timeout_s: 2}",
            name="cachenew",
        ),
        "deep.yaml": deep,
    }
    for name, text in configs.items():
        (work / name).write_text(text)
    spec = json.loads(json.dumps(EDUCATION.read_text()))
    (work / "wide-template.yaml").write_text(
        spec.replace("persona_template:", "persona_template_unused:")
        + "persona_template: 'You are {gender:>999999999}.'\n"
    )
    before = files_under(work)
    cases = {
        "out-is-a-file": ["run", "plain.yaml", "--out", "taken"],
        "out-below-a-file": ["run", "plain.yaml", "--out", "taken/results"],
        "long-name": ["run", "long-name.yaml", "--out", "results"],
        "wide-range": ["run", "wide-range.yaml", "--out", "results"],
        "cache-dir": ["run", "cache-dir.yaml", "--out", "results"],
        "cache-text": ["run", "cache-text.yaml", "--out", "results"],
        "cache-unreachable": ["run", "cache-unreachable.yaml", "--out", "results"],
        "deep-yaml": ["run", "deep.yaml", "--out", "results"],
        "sample-unbounded": ["personas", "sample", str(EDUCATION), "-n", str(10**12)],
        "wide-template": ["personas", "sample", "wide-template.yaml", "-n", "3"],
    }
    results = run_all(cases, work)
    assert_user_error(results["out-is-a-file"], "taken", "out")
    assert_user_error(results["out-below-a-file"], "taken", "out")
    assert_user_error(results["long-name"], "name")
    assert_user_error(results["wide-range"], "game")
    assert_user_error(results["cache-dir"], "model.cache", "directory")
    assert_user_error(results["cache-text"], "model.cache", "SQLite")
    assert_user_error(results["cache-unreachable"], "model.base_urls")
    assert_user_error(results["deep-yaml"], "deep.yaml", "nested")
    assert_user_error(results["sample-unbounded"], "-n")
    assert_user_error(results["wide-template"], "persona_template")
    assert files_under(work) == before  # no bundle, no results folder, no cache file
    assert (work / "taken").read_text() == "a file, not a folder\n"


def test_bundles_show_on_a_manifest_with_wrong_types(tmp_path: Path) -> None:
    from workbench.results import Bundle

    run = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "run", "plain.yaml", "--out", "out"],
        cwd=_with_config(tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    bundle = Path(tmp_path / run.stdout.strip().splitlines()[-1].removeprefix("bundle: "))
    assert Bundle.open(bundle).is_complete
    manifest = json.loads((bundle / "manifest.json").read_text())
    cases = {}
    for field, value in {"rounds": "three", "created_at": 17, "model": ["x"], "error": {}}.items():
        damaged = tmp_path / f"damaged-{field}"
        shutil.copytree(bundle, damaged)
        (damaged / "manifest.json").write_text(json.dumps({**manifest, field: value}))
        cases[field] = ["bundles", "show", str(damaged)]
    before = files_under(tmp_path)
    results = run_all(cases, tmp_path)
    for field, result in results.items():
        assert_user_error(result, "manifest.json", field)
    assert files_under(tmp_path) == before


def _with_config(path: Path, *lines: str) -> Path:
    (path / "plain.yaml").write_text(config_text(*lines))
    return path


def _wait_for(predicate, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _running_bundle(out: Path) -> Path | None:
    from workbench.runs import run_state

    for path in out.glob("*/events.jsonl") if out.is_dir() else []:
        if run_state(path.parent).rounds_done >= 1:
            return path.parent
    return None


def test_ctrl_c_names_the_bundle_and_a_resume_of_a_live_run_is_refused(tmp_path: Path) -> None:
    from workbench.results import Bundle

    cwd = _with_config(tmp_path, "game: {rounds: 20}", "policy: {kind: random, latency_s: 0.5}")
    with interruptible():  # an ignored SIGINT would be inherited
        proc = subprocess.Popen(
            [sys.executable, "-m", "workbench.cli", "run", "plain.yaml", "--out", "out"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    try:
        _wait_for(lambda: _running_bundle(tmp_path / "out") is not None)
        bundle = _running_bundle(tmp_path / "out")
        assert bundle is not None
        # a second writer on the live bundle is refused, and changes nothing
        before = (bundle / "manifest.json").read_bytes()
        second = subprocess.run(
            [sys.executable, "-m", "workbench.cli", "run", "--resume", str(bundle)],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert_user_error(second, str(proc.pid))
        assert proc.poll() is None, "the first run must still be alive"
        os.kill(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, (stdout, stderr)
    assert f"workbench run --resume {bundle.relative_to(cwd)}\n" in stderr, stderr
    assert "Traceback" not in stderr
    opened = Bundle.open(bundle)
    assert opened.status == "cancelled"
    assert before != (bundle / "manifest.json").read_bytes()  # the first writer went on
