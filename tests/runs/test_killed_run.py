"""One truth about a run: after a SIGKILL, every reader says dead, never running.

A slow random-policy `workbench run --run-id` (no model) runs in a subprocess; once a round is
recorded it is killed with SIGKILL. Then `workbench runs list`, `workbench bundles list|show`,
`Bundle.status`, `list_bundles`, `run_state().true_status`, the launcher page's status and the
monitor's tables all read "dead", from the one function `results.current_status.run_status`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import SLOW_RUN_YAML, workbench

from workbench.results import Bundle, list_bundles, run_status
from workbench.runs.follower import follow, run_state
from workbench.runs.launch_states import bundle_state, list_runs
from workbench.runs.shards import running_runs, shard_actors

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc"),
]


def _rounds(bundle: Path) -> int:
    try:
        return len(json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["rounds"])
    except (FileNotFoundError, ValueError, KeyError):
        return 0


def test_a_sigkilled_run_reads_dead_everywhere(tmp_path: Path) -> None:
    config = tmp_path / "slow.yaml"
    config.write_text(SLOW_RUN_YAML, encoding="utf-8")
    out = tmp_path / "results"
    args = ["run", str(config), "--out", str(out), "--run-id", "killed-1", "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    bundle = out / "killed-1"  # the run id names the bundle: no search
    try:
        deadline = time.monotonic() + 90
        while _rounds(bundle) < 1:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no round recorded within 90 s"
            time.sleep(0.1)
        assert Bundle.open(bundle).status == "running"
        assert run_state(bundle).true_status == "running"
        assert running_runs(out)["run_id"].tolist() == ["killed-1"]
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    opened = Bundle.open(bundle)
    assert opened.recorded_status == "running"  # the manifest cannot know
    assert opened.status == "dead" == run_status(bundle)
    assert list_bundles(out)["status"].tolist() == ["dead"]
    assert run_state(bundle).true_status == "dead"
    assert bundle_state(bundle).status == "dead"  # what the launcher page shows
    assert list_runs(out)["status"].tolist() == ["dead"]
    assert running_runs(out).empty  # the monitor lists it nowhere as running
    shards = shard_actors(out)
    assert set(shards["run_status"]) == {"dead"} and "playing" not in set(shards["state"])
    last = list(follow(bundle, poll_s=0.05, timeout_s=30))[-1]
    assert last.status == "dead" and "died without finishing" in (last.error or "")

    listed = workbench("runs", "list", out, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if "killed-1" in line]
    assert row.split()[:2] == ["killed-1", "dead"]
    bundles = workbench("bundles", "list", out, cwd=tmp_path)
    assert (
        bundles.returncode == 0 and " dead " in bundles.stdout and "running" not in bundles.stdout
    )
    shown = workbench("bundles", "show", bundle, cwd=tmp_path)
    assert shown.stdout.splitlines()[0] == "run:     killed-1 (dead)"
    assert f"resume:  workbench run --resume {bundle}" in shown.stdout


def test_the_dashboard_launcher_reads_the_same_status(tmp_path: Path, make_config) -> None:
    """The page's status is the one status: a bundle whose writer is gone reads dead there."""
    from workbench.results import BundleWriter
    from workbench.ui.run_launcher import RunLauncher

    config = make_config(policy={"kind": "level_k"})
    writer = BundleWriter(tmp_path, config, run_id="gone-1")
    launcher = RunLauncher(results_dir=str(tmp_path))
    assert launcher.bundle == str(writer.path) and launcher.status == "running"  # re-attached
    writer.close()  # its writer gives up without finishing: no one writes it any more
    launcher.refresh()
    assert launcher.status == "dead" == Bundle.open(writer.path).status
    assert "workbench run --resume" in launcher.error
