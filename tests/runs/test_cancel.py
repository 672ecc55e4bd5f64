"""Cancel signals only a process proven to be the launch's own `workbench run`.

A foreign process (`sleep 300`, started by this test) is named by planted launch records: one
plain, one whose recorded command line and start time copy the foreign process's exactly. Every
cancel (the library, the CLI, the monitor's one-line cancel) is refused with a clear message and
the process is still alive afterwards.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_helpers import workbench

from workbench._processes import process_alive, process_command, process_started
from workbench.errors import BundleError
from workbench.runs.cancelling import cancel, cancel_run
from workbench.runs.records import LAUNCHES_DIR, Launch

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc")


@pytest.fixture
def foreign_process() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this user that is no workbench run."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _plant(results: Path, run_id: str, pid: int, command: list[str], started_at: str) -> Path:
    folder = results / LAUNCHES_DIR / run_id
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("name: x\n", encoding="utf-8")
    record = {
        "launch_id": run_id,
        "pid": pid,
        "host": socket.gethostname(),
        "started_at": started_at,
        "config": str(folder / "config.yaml"),
        "log": str(folder / "run.log"),
        "command": command,
        "name": "x",
        "rounds": 3,
    }
    (folder / "launch.json").write_text(json.dumps(record), encoding="utf-8")
    return folder


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def test_a_planted_record_pointing_at_a_foreign_process_is_refused(
    foreign_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    started = process_started(foreign_process.pid)
    assert started is not None
    # the record copies the foreign process's own command line and start time
    command = list(process_command(foreign_process.pid) or ())
    folder = _plant(results, "planted-1", foreign_process.pid, command, _iso(started))

    with pytest.raises(BundleError, match=r"is not this launch's `workbench run`.*nothing sent"):
        cancel(Launch.read(folder))
    said = cancel_run(results / "planted-1")  # the monitor's cancel, by the bundle's path
    assert "is not this launch's `workbench run`" in said and "nothing sent" in said

    done = workbench("runs", "cancel", "planted-1", "--results", results, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: launch planted-1: pid ") and "nothing sent" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (folder / "cancel.json").exists()
    assert foreign_process.poll() is None and process_alive(foreign_process.pid)  # unharmed


def test_a_forged_command_line_still_needs_the_process_to_say_it(
    foreign_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """A record may claim the launch's exact `workbench run` command: the process's own command
    line (from /proc) is what counts, and `sleep` is no workbench run."""
    results = tmp_path / "results"
    folder = results / LAUNCHES_DIR / "planted-2"
    claimed = [sys.executable, "-m", "workbench.cli", "run", str(folder / "config.yaml")]
    claimed += ["--out", str(results), "--run-id", "planted-2", "--no-progress"]
    started = process_started(foreign_process.pid) or 0.0
    _plant(results, "planted-2", foreign_process.pid, claimed, _iso(started))
    with pytest.raises(BundleError, match="is not this launch's `workbench run`"):
        cancel(folder)
    assert foreign_process.poll() is None


def test_a_record_from_another_time_or_host_is_refused(
    foreign_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    folder = _plant(
        results, "old-1", foreign_process.pid, ["sleep", "300"], "2020-01-01T00:00:00+00:00"
    )
    record = Launch.read(folder)
    assert record.bundle == results / "old-1"
    with pytest.raises(BundleError, match="not this launch's `workbench run`.*nothing sent"):
        cancel(record)
    other = _plant(results, "elsewhere-1", foreign_process.pid, ["sleep", "300"], _iso(0))
    data = json.loads((other / "launch.json").read_text(encoding="utf-8"))
    (other / "launch.json").write_text(json.dumps({**data, "host": "another-host"}))
    assert "runs on host another-host; cancel it there" in cancel_run(other)
    assert foreign_process.poll() is None


def test_a_bundle_without_a_launch_record_is_not_cancelled_from_here(tmp_path: Path) -> None:
    bundle = tmp_path / "results" / "someone-1"
    bundle.mkdir(parents=True)
    with pytest.raises(BundleError, match="no launch record.*Ctrl-C"):
        cancel(bundle)
