"""Launches (`workbench.runs`): a real detached `workbench run --run-id` per launch, read back
from disk.

A launch writes the bundle a direct `workbench run` of the same config writes, into the folder
its run id names; an invalid config, an unreachable endpoint or a launch over a limit raises
before anything is written or started; a cancel marks the bundle cancelled end to end; a killed
run reads dead, one that exits before its bundle failed with its error, never running. Every
wait is bounded.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import workbench
from fake_openai import FakeServer
from ports import free_port

from workbench.config import RunConfig, load_run_config
from workbench.errors import BundleError, ConfigError, ModelError
from workbench.results import Bundle, list_bundles, verify_bundle
from workbench.results.layout import LOCK_FILE
from workbench.runs.cancelling import cancel
from workbench.runs.launch_states import LaunchState, bundle_state, launches, log_error, wait_for
from workbench.runs.launcher import check_model, launch
from workbench.runs.records import LAUNCHES_DIR, Launch
from workbench.ui.run_tables import launches_table, round_table, shard_table

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc"),
]

WAIT_S = 90.0
"""Longest wait for a launched run (its process pays seconds of imports on a busy machine)."""


def until(check: Callable[[], LaunchState | None], timeout_s: float = WAIT_S) -> LaunchState:
    """Poll `check` until it returns a state; AssertionError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = check()
        if state is not None:
            return state
        time.sleep(0.2)
    raise AssertionError(f"not reached within {timeout_s} s")


def only(launch_results_dir: Path) -> LaunchState:
    """The one launch under `launch_results_dir`."""
    (state,) = launches(launch_results_dir)
    return state


@pytest.fixture
def slow_config(make_config: Callable[..., RunConfig]) -> RunConfig:
    """Six rounds of random agents that wait 1 s a round: time to cancel or kill mid-run."""
    return make_config(
        policy={"kind": "random", "latency_s": 1.0}, n_agents=20, rounds=6, name="slow"
    )


def _responses(bundle: Bundle) -> pd.DataFrame:
    frame = bundle.responses().drop(columns=["latency_s"])
    return frame.sort_values(["round", "agent_id"], ignore_index=True)


def test_a_launch_writes_the_bundle_the_cli_writes(
    launch_results_dir: Path, tmp_path: Path, make_config: Callable[..., RunConfig]
) -> None:
    config = make_config(policy={"kind": "level_k"}, n_agents=30, rounds=2, agents_per_shard=10)
    record = launch(config, launch_results_dir)
    stored = json.loads((record.folder / "launch.json").read_text(encoding="utf-8"))
    assert stored["pid"] == record.pid
    assert stored["command"][1:] == [
        *("-m", "workbench.cli", "run", str(record.config_path)),
        *(
            "--out",
            str(launch_results_dir.absolute()),
            "--run-id",
            record.launch_id,
            "--no-progress",
        ),
    ]
    # the launcher knows its child's bundle from the run id it chose, before the child starts
    assert record.bundle == launch_results_dir.absolute() / record.launch_id
    assert Launch.read(record.folder) == record
    assert load_run_config(record.config_path) == config  # the config, in the CLI's YAML

    state = wait_for(launch_results_dir, record.launch_id, timeout_s=WAIT_S)
    assert state.status == "complete" and state.error is None
    assert state.rounds_done == state.rounds == 2
    assert state.bundle == record.bundle and Bundle.open(record.bundle).run_id == record.launch_id
    assert verify_bundle(state.bundle).ok
    assert (
        until(
            lambda: s if (s := only(launch_results_dir)).returncode is not None else None
        ).returncode
        == 0
    )
    # the launch folder is no bundle: the listing holds the run's bundle only
    assert list(list_bundles(launch_results_dir)["path"].map(lambda p: Path(p).name)) == [
        state.bundle.name
    ]

    direct = workbench("run", record.config_path, "--out", tmp_path / "direct", cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr
    (other,) = (tmp_path / "direct").iterdir()
    launched, cli = Bundle.open(state.bundle), Bundle.open(other)
    pd.testing.assert_frame_equal(_responses(launched), _responses(cli))
    pd.testing.assert_frame_equal(launched.personas(), cli.personas())
    pd.testing.assert_frame_equal(
        launched.rounds().drop(columns=["seconds"]), cli.rounds().drop(columns=["seconds"])
    )

    # the tables the page shows come from the run's events and agree with the bundle
    rounds = round_table(state.run)
    assert list(rounds["round"]) == [1, 2]
    assert list(rounds["mean"]) == pytest.approx(list(cli.rounds()["mean"]))
    shards = shard_table(state.run)
    assert list(shards["shard"]) == [0, 1, 2] and set(shards["state"]) == {"done"}
    assert list(shards["answered"]) == [10, 10, 10] and set(shards["round"]) == {2}
    table = launches_table(launches(launch_results_dir))
    assert table.loc[0, "status"] == "complete" and table.loc[0, "rounds"] == "2/2"
    # the followed launch's row is the page's own state, whatever the disk said a moment ago
    (listed,) = launches(launch_results_dir)
    stale = dataclasses.replace(listed, status="running", rounds_done=0)
    table = launches_table([stale], current=listed)
    assert table.loc[0, "status"] == "complete" and table.loc[0, "rounds"] == "2/2"
    assert launches_table([stale], current=None).loc[0, "status"] == "running"


def test_an_invalid_config_raises_and_starts_nothing(
    launch_results_dir: Path, tmp_path: Path, make_config: Callable[..., RunConfig]
) -> None:
    bad = make_config(policy={"kind": "level_k", "attribute": "shoe_size"})
    with pytest.raises(ConfigError, match="policy.attribute: 'shoe_size' is not a population"):
        launch(bad, launch_results_dir)
    assert not (launch_results_dir / LAUNCHES_DIR).exists() and launches(launch_results_dir) == []

    a_file = tmp_path / "taken"
    a_file.write_text("not a folder", encoding="utf-8")
    with pytest.raises(ConfigError, match="results_dir: .* is a file"):
        launch(make_config(policy={"kind": "level_k"}), a_file / "results")


def test_an_unreachable_endpoint_fails_before_anything_starts(
    launch_results_dir: Path, make_config: Callable[..., RunConfig]
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = make_config(
        policy={"kind": "llm"},
        model={"kind": "openai", "base_urls": [url], "name": "m", "timeout_s": 5},
    )
    start = time.monotonic()
    with pytest.raises(ModelError, match=f"cannot reach {url}.*is the server running"):
        launch(config, launch_results_dir)
    assert time.monotonic() - start < 10
    assert not launch_results_dir.exists()  # not even the results folder

    with FakeServer(model="m") as server:
        reachable = config.with_base_urls([server.url])
        assert check_model(reachable) == f"reachable: {server.url} serve m"


def test_a_prompt_too_long_for_the_context_is_refused_before_anything_starts(
    launch_results_dir: Path, make_config: Callable[..., RunConfig]
) -> None:
    """The launcher refuses what `workbench run` refuses (`Simulation.preflight`): round 20's
    prompt, with its history, does not fit a 256-token context."""
    config = make_config(policy={"kind": "llm"}, model={"n_ctx": 256}, rounds=20)
    with pytest.raises(ConfigError, match="model.n_ctx: 256 tokens cannot hold round 20's"):
        launch(config, launch_results_dir)
    assert not launch_results_dir.exists()  # no launch record, no bundle, no process


def test_a_run_that_exits_before_its_bundle_reads_failed_with_its_log_line(
    launch_results_dir: Path, make_config: Callable[..., RunConfig]
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    config = make_config(
        policy={"kind": "llm"}, model={"kind": "openai", "base_urls": [url], "name": "m"}
    )
    record = launch(config, launch_results_dir, check=False)  # the run's own check then fails
    state = until(lambda: s if (s := only(launch_results_dir)).finished else None)
    assert state.status == "failed" and state.bundle is None
    assert state.error is not None and f"cannot reach {url}" in state.error
    assert state.error == log_error(record.log_path)
    assert list_bundles(launch_results_dir).empty
    with pytest.raises(BundleError, match="the run is failed; nothing to cancel"):
        cancel(record)


def test_cancel_mid_run_marks_the_bundle_cancelled(
    launch_results_dir: Path, slow_config: RunConfig
) -> None:
    record = launch(slow_config, launch_results_dir)
    running = until(lambda: s if (s := only(launch_results_dir)).rounds_done >= 1 else None)
    assert running.status == "running" and running.bundle is not None
    assert cancel(running) == record.pid  # the launch's process writes the bundle

    state = until(lambda: s if (s := only(launch_results_dir)).finished else None, 30)
    assert state.status == "cancelled"
    assert state.error is not None and "Cancelled" in state.error
    assert 1 <= state.rounds_done < 6
    bundle = Bundle.open(state.bundle)
    assert bundle.status == "cancelled" and len(bundle.rounds()) == state.rounds_done
    assert [p.split(":")[0] for p in verify_bundle(bundle.path).problems] == ["incomplete"]
    assert (
        until(
            lambda: s if (s := only(launch_results_dir)).returncode is not None else None
        ).returncode
        == 130
    )
    with pytest.raises(BundleError, match="nothing to cancel"):
        cancel(state.bundle)


def test_a_killed_run_reads_dead_never_running(
    launch_results_dir: Path, slow_config: RunConfig
) -> None:
    record = launch(slow_config, launch_results_dir)
    running = until(lambda: s if (s := only(launch_results_dir)).rounds_done >= 1 else None)
    os.kill(record.pid, signal.SIGKILL)
    state = until(lambda: s if (s := only(launch_results_dir)).status != "running" else None, 30)
    assert state.status == "dead" and state.bundle == running.bundle == record.bundle
    assert f"pid {record.pid}) died without finishing" in (state.error or "")
    assert f"workbench run --resume {state.bundle}" in (state.error or "")
    opened = Bundle.open(state.bundle)
    assert opened.recorded_status == "running" and opened.status == "dead"  # one truth
    assert "playing" not in set(shard_table(state.run)["state"])  # its shards never look live
    with pytest.raises(BundleError, match="no longer running|nothing to cancel"):
        cancel(state.bundle)


def test_launch_limits_refuse_before_anything_starts(
    launch_results_dir: Path, slow_config: RunConfig, make_config: Callable[..., RunConfig]
) -> None:
    big = make_config(policy={"kind": "level_k"}, n_agents=100, rounds=3)
    with pytest.raises(ConfigError, match=r"n_agents x game.rounds: 100 x 3 = 300 .* limit of 299"):
        launch(big, launch_results_dir, max_agent_rounds=299)
    assert not (launch_results_dir / LAUNCHES_DIR).exists()

    first = launch(slow_config, launch_results_dir, max_live=1)
    with pytest.raises(
        ConfigError,
        match=rf"1 runs are already running .*{first.launch_id}.*"
        r"limit is 1.*max_live=N",
    ):
        launch(slow_config, launch_results_dir, max_live=1)
    assert [s.launch_id for s in launches(launch_results_dir)] == [first.launch_id]
    assert cancel(first) == first.pid


def test_a_run_reads_finished_only_once_its_manifest_is_final(
    tmp_path: Path, make_config: Callable[..., RunConfig]
) -> None:
    from workbench.runtime import run

    done = run(make_config(policy={"kind": "level_k"}), out_dir=tmp_path, progress=False)
    assert bundle_state(done.path).status == "complete"
    manifest = done.path / "manifest.json"
    data = json.loads(manifest.read_text(encoding="utf-8"))
    # as between the run's last event and its manifest: events say complete, manifest not yet,
    # and the writer lock is held by a live process: running
    manifest.write_text(json.dumps({**data, "status": "running", "finished_at": None}))
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        lock = {"pid": writer.pid, "host": socket.gethostname(), "started_at": _now()}
        (done.path / LOCK_FILE).write_text(json.dumps(lock), encoding="utf-8")
        assert bundle_state(done.path).status == "running"
    finally:
        writer.kill()
        writer.wait()
    state = bundle_state(done.path)  # its writer is gone: dead, with how to finish it
    assert state.status == "dead" and "died without finishing" in (state.error or "")
    assert Bundle.open(done.path).status == "dead"


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds")
