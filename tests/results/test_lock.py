"""One writer per bundle: a live second writer is refused, a dead one's lock is taken over."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.errors import BundleLockedError
from workbench.results import Bundle, BundleWriter, verify_bundle

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="forks a writer process")

FORK = multiprocessing.get_context("fork")


def _hold(path: str, ready, leave) -> None:
    """In a child process: take the bundle's writer lock, say so, wait, then let go."""
    writer = BundleWriter.reopen(path)
    ready.set()
    leave.wait(30)
    writer.close()


def _die_holding(path: str) -> None:
    """In a child process: take the writer lock and die without releasing it (a kill)."""
    BundleWriter.reopen(path)
    os._exit(0)


def lock_of(bundle: Path) -> dict:
    return json.loads((bundle / ".writer.lock").read_text())


def assert_holds(writer: BundleWriter) -> None:
    """`writer` holds the bundle's lock: the lock names this process on this host, and a
    second writer is refused while it lives (a lock no live writer here held would be taken
    over as stale)."""
    held = lock_of(writer.path)
    assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    with pytest.raises(BundleLockedError, match=rf"pid {os.getpid()} on host "):
        BundleWriter.reopen(writer.path)


def test_the_writer_holds_a_lock_until_finish(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    held = lock_of(writer.path)
    assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
    assert "started_at" in held
    writer.finish()
    assert not (writer.path / ".writer.lock").exists()
    assert verify_bundle(writer.path).ok  # the lock was never a data file


def test_a_second_writer_in_this_process_is_refused(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    with pytest.raises(BundleLockedError, match=rf"pid {os.getpid()} on host "):
        BundleWriter.reopen(writer.path)
    writer.close()
    BundleWriter.reopen(writer.path).finish()  # close() gave the lock back
    assert Bundle.open(writer.path).is_complete


def test_a_live_writer_in_another_process_is_refused(tmp_path: Path, config) -> None:
    BundleWriter(tmp_path, config, run_id="r1").close()
    bundle = tmp_path / "r1"
    ready, leave = FORK.Event(), FORK.Event()
    child = FORK.Process(target=_hold, args=(str(bundle), ready, leave))
    child.start()
    try:
        assert ready.wait(30)
        before = (bundle / "manifest.json").read_bytes()
        with pytest.raises(BundleLockedError) as caught:
            BundleWriter.reopen(bundle)
        message = str(caught.value)
        assert "\n" not in message and str(bundle) in message
        assert f"pid {child.pid} on host {socket.gethostname()}" in message
        assert "wait for that run to end" in message
        assert (bundle / "manifest.json").read_bytes() == before  # nothing touched
    finally:
        leave.set()
        child.join(30)
    assert not (bundle / ".writer.lock").exists()
    BundleWriter.reopen(bundle).finish()


def test_a_dead_writers_lock_is_taken_over(tmp_path: Path, config) -> None:
    BundleWriter(tmp_path, config, run_id="r1").close()
    bundle = tmp_path / "r1"
    child = FORK.Process(target=_die_holding, args=(str(bundle),))
    child.start()
    child.join(30)
    assert lock_of(bundle)["pid"] == child.pid  # left behind by the dead process
    writer = BundleWriter.reopen(bundle)
    assert lock_of(bundle)["pid"] == os.getpid()
    writer.finish()


def test_a_lock_from_a_dead_pid_in_a_subprocess_is_stale(tmp_path: Path, config) -> None:
    BundleWriter(tmp_path, config, run_id="r1").close()
    bundle = tmp_path / "r1"
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    info = {"pid": int(done.stdout), "host": socket.gethostname(), "started_at": "then"}
    (bundle / ".writer.lock").write_text(json.dumps(info))
    writer = BundleWriter.reopen(bundle)
    assert_holds(writer)
    writer.finish()
    assert not (bundle / ".writer.lock").exists()
    assert Bundle.open(bundle).is_complete


def test_a_dropped_writer_in_this_process_is_taken_over(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    path = writer.path
    del writer  # as if the run was killed: nothing released the lock
    assert lock_of(path)["pid"] == os.getpid()  # left behind, its holder gone
    reopened = BundleWriter.reopen(path)
    assert_holds(reopened)
    reopened.finish()
    assert not (path / ".writer.lock").exists()
    assert Bundle.open(path).is_complete


def test_a_lock_from_another_host_is_refused_with_the_fix(tmp_path: Path, config) -> None:
    BundleWriter(tmp_path, config, run_id="r1").close()
    bundle = tmp_path / "r1"
    lock = bundle / ".writer.lock"
    lock.write_text(json.dumps({"pid": 1, "host": "elsewhere", "started_at": "then"}))
    with pytest.raises(BundleLockedError) as caught:
        BundleWriter.reopen(bundle)
    message = str(caught.value)
    assert "pid 1 on host elsewhere" in message
    assert f"if that process is gone, delete {lock}" in message and "\n" not in message
    lock.unlink()
    BundleWriter.reopen(bundle).finish()


def test_an_unreadable_lock_is_refused_with_the_fix(tmp_path: Path, config) -> None:
    BundleWriter(tmp_path, config, run_id="r1").close()
    lock = tmp_path / "r1" / ".writer.lock"
    lock.write_text("")
    with pytest.raises(BundleLockedError, match=f"delete {lock}"):
        BundleWriter.reopen(tmp_path / "r1")
