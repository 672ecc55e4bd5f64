"""A run killed mid-way leaves an incomplete bundle that never passes for a complete one.

`workbench run` plays a slow random-policy game (1 s a round) in a subprocess; once a round is
recorded the process is killed (SIGKILL) or interrupted (SIGINT, as Ctrl-C does). Every wait is
bounded, so a hung run fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import SLOW_RUN_YAML, interruptible

from workbench.results import Bundle, verify_bundle
from workbench.results.layout import LOCK_FILE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

START_TIMEOUT_S = 60.0
"""Longest wait for the first round to be recorded (the subprocess pays seconds of imports)."""
EXIT_TIMEOUT_S = 10.0


def start_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """Start `workbench run` on the slow config; returns the process and its --out dir."""
    config = tmp_path / "slow.yaml"
    config.write_text(SLOW_RUN_YAML, encoding="utf-8")
    out = tmp_path / "out"
    args = [sys.executable, "-m", "workbench.cli", "run", str(config), "--out", str(out)]
    with interruptible():  # an ignored SIGINT would be inherited
        proc = subprocess.Popen(
            [*args, "--no-progress"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    return proc, out


def manifest_rounds(out: Path) -> tuple[Path | None, int]:
    """The bundle directory under `out` (if any) and how many rounds its manifest records."""
    bundles = [p for p in out.iterdir() if p.is_dir()] if out.is_dir() else []
    if len(bundles) != 1:
        return None, 0
    try:  # the manifest is replaced atomically, so it is whole or absent
        manifest = json.loads((bundles[0] / "manifest.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return bundles[0], 0
    return bundles[0], len(manifest.get("rounds") or [])


def wait_for_first_round(proc: subprocess.Popen[str], out: Path) -> Path:
    """Poll until the run has recorded at least one round (and fewer than all six)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        bundle, rounds = manifest_rounds(out)
        if bundle is not None and rounds >= 1:
            assert rounds < 6, "the run finished before it could be interrupted"
            return bundle
        if proc.poll() is not None:
            stdout, stderr = proc.communicate()
            pytest.fail(f"run exited early ({proc.returncode}): {stdout}\n{stderr}")
        time.sleep(0.05)
    proc.kill()
    proc.communicate(timeout=EXIT_TIMEOUT_S)
    pytest.fail(f"no round was recorded within {START_TIMEOUT_S} s")


@pytest.fixture
def started_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A started slow run; killed at teardown whatever the test did."""
    proc, out = start_run(tmp_path)
    try:
        yield proc, out
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=EXIT_TIMEOUT_S)


def test_sigkill_leaves_an_incomplete_bundle(
    started_run: tuple[subprocess.Popen[str], Path], tmp_path: Path
) -> None:
    proc, out = started_run
    path = wait_for_first_round(proc, out)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=EXIT_TIMEOUT_S)
    assert proc.returncode == -signal.SIGKILL

    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "running"
    assert manifest["finished_at"] is None
    assert manifest["files"] == {}
    done = len(manifest["rounds"])
    assert 1 <= done < 6

    bundle = Bundle.open(path)
    assert bundle.status == "dead"  # marked running, but its writer is gone
    assert not bundle.is_complete
    rounds = bundle.rounds()
    assert len(rounds) in (done, done + 1)  # rounds.parquet is written just before the manifest
    assert list(rounds["round"]) == list(range(1, len(rounds) + 1))
    assert len(bundle.personas()) == 20
    for number in range(1, done + 1):
        assert len(bundle.responses(number)) == 20

    report = verify_bundle(path)
    assert not report.ok
    assert any(p.startswith("incomplete: status is dead") for p in report.problems)

    # A kill can strike mid-write; a temp file left then starts with "." and is never read as
    # data: not as a part file, nor as the manifest or rounds table.
    for temp in path.rglob(".*"):
        assert temp.name.endswith(".tmp") or temp.name == LOCK_FILE, temp
    data_files = {p.name for p in bundle.response_files()}
    assert not any(name.startswith(".") for name in data_files)
    assert all(p.name.startswith("part-") for p in bundle.response_files())

    result = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "bundles", "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(f"FAILED {path}")
    assert "incomplete: status is dead" in result.stdout
    assert "Traceback" not in result.stderr


def test_sigint_marks_the_bundle_cancelled(started_run: tuple[subprocess.Popen[str], Path]) -> None:
    proc, out = started_run
    path = wait_for_first_round(proc, out)
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the run did not exit within {EXIT_TIMEOUT_S} s of SIGINT")
    assert proc.returncode != 0
    assert "Traceback" not in stderr

    bundle = Bundle.open(path)
    assert bundle.status == "cancelled"
    assert not bundle.is_complete
    assert bundle.manifest["finished_at"] is not None
    assert bundle.manifest["error"]  # what stopped it
    done = bundle.rounds_count
    assert 1 <= done < 6
    assert len(bundle.rounds()) == done

    report = verify_bundle(path)
    assert not report.ok
    assert report.problems[0].startswith("incomplete: status is cancelled")
    # Apart from being incomplete, what was written is consistent: hashes and statistics check.
    assert [p for p in report.problems if not p.startswith("incomplete")] == []
    assert not [p for p in path.rglob(".*")]  # a clean exit leaves no temp files
