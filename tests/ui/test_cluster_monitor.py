"""ClusterMonitor's state after refresh(), on real runs: a finished local run's shards, a live
launched run cancelled from the monitor (a run started from a shell is shown but
not cancelled), the test Ray cluster's nodes, a Ray
address that does not answer, and the page it builds (with the css classes the browser tests
find); a Ray run's work per model engine (a bundle written by hand, tests/engine_bundle.py),
its texts from files escaped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import panel as pn
import pytest
from engine_bundle import NODES, write_engine_bundle
from pane_text import live_markup, markup, text_of
from run_configs import run_config

from workbench.results import Bundle
from workbench.results.layout import ENGINE_WORK_FIELDS, EVENTS_FILE
from workbench.runs.shards import ENGINE_COLUMNS
from workbench.runtime import Simulation
from workbench.ui.cluster_monitor import CSS_CLASSES, NO_ENGINE_WORK, ClusterMonitor

SLOW_CONFIG = """\
name: slow
seed: 5
n_agents: 8
population:
  name: tiny
  dimensions:
    - name: gender
      shares: {male: 1/2, female: 1/2}
game: {rounds: 20}
policy: {kind: random, latency_s: 1.0}
backend: {agents_per_shard: 4}
"""
"""A run that plays for 20 s (two shards of four agents, a second a round)."""


@pytest.fixture(scope="module")
def one_run_results_dir(education_spec, tmp_path_factory) -> Path:
    """A results folder with one complete local level-k run (10 agents, shards of 5)."""
    config = run_config(
        education_spec,
        rounds=1,
        agents_per_shard=5,
        name="done",
        seed=2,
        n_agents=10,
        policy={"kind": "level_k"},
    )
    root = tmp_path_factory.mktemp("results")
    Simulation(config).run(out_dir=root, progress=False)
    return root


def test_refresh_reads_the_shards_of_the_newest_run(one_run_results_dir):
    monitor = ClusterMonitor(results_dir=str(one_run_results_dir))
    assert monitor.shards.empty  # nothing is read before the first refresh
    asyncio.run(monitor.refresh())

    assert monitor.shards["agents"].tolist() == [5, 5]
    assert set(monitor.shards["run_status"]) == {"complete"}
    assert monitor.run_id is None  # nothing running to cancel
    assert [o for o in monitor.param.run_id.objects if o is not None] == []
    assert monitor.endpoints.empty
    assert monitor.cluster  # the Ray line says connected or how to connect
    assert not monitor.refreshing


def test_the_page_builds_with_its_css_classes(one_run_results_dir):
    monitor = ClusterMonitor(results_dir=str(one_run_results_dir))
    asyncio.run(monitor.refresh())
    page = monitor.__panel__()

    found = {c for obj in page.select(pn.viewable.Viewable) for c in obj.css_classes or []}
    assert set(CSS_CLASSES.values()) <= found
    (shards,) = [
        t for t in page.select(pn.widgets.Tabulator) if CSS_CLASSES["shards"] in t.css_classes
    ]
    assert shards.value["agents"].tolist() == [5, 5]
    assert shards.pagination == "remote"
    (cancel,) = [
        b for b in page.select(pn.widgets.Button) if CSS_CLASSES["cancel"] in b.css_classes
    ]
    assert cancel.disabled  # no running run
    assert monitor._periodic is None  # no periodic refresh outside a served page or notebook


HOSTILE_RUN = "<img src=x onerror=window.__pwned=1> [x](javascript:alert(1)) **b**"
"""A run id planted in a bundle's events (the manifest's is checked, the events' are not)."""


def test_a_ray_runs_engines_are_tabled_newest_round_first(tmp_path: Path) -> None:
    bundle = write_engine_bundle(tmp_path, nodes=(NODES[0], "<b>node</b>"))
    events = bundle / EVENTS_FILE
    planted = events.read_text(encoding="utf-8").replace('"ray-run"', json.dumps(HOSTILE_RUN))
    events.write_text(planted, encoding="utf-8")
    monitor = ClusterMonitor(results_dir=str(tmp_path), engine_rounds=2)
    asyncio.run(monitor.refresh())

    engines = monitor.engines
    assert tuple(engines.columns) == ENGINE_COLUMNS
    assert set(ENGINE_COLUMNS) == {"run_id", *ENGINE_WORK_FIELDS, "share", "address"}
    assert engines[["round", "engine"]].values.tolist() == [[3, 0], [3, 1], [2, 0], [2, 1]]
    assert engines["prompts"].tolist() == [60, 40, 41, 40]
    assert engines["node"].tolist() == [NODES[0], "<b>node</b>"] * 2
    assert engines["share"].tolist() == pytest.approx([0.6, 0.4, 41 / 81, 40 / 81])
    assert set(engines["run_id"]) == {HOSTILE_RUN}
    summary = (
        f"{HOSTILE_RUN} round 3: 100 prompts, 25,000 prompt tokens, 700 nodes scored on "
        "2 engine(s); largest share 0.60 (ideal 0.50)"
    )
    assert monitor.engine_lines == summary

    page = monitor.__panel__()
    (table,) = [
        t for t in page.select(pn.widgets.Tabulator) if CSS_CLASSES["engines"] in t.css_classes
    ]
    assert table.value["prompts"].tolist() == [60, 40, 41, 40]
    assert table.formatters["share"].format == "0.00"
    drawn = [fragment for _, fragment in markup(page)]
    assert [live for f in drawn if (live := live_markup(f))] == []
    assert any(text_of(f) == summary for f in drawn)  # the run id reads as the text it is


def test_a_local_run_has_no_engine_work(one_run_results_dir):
    monitor = ClusterMonitor(results_dir=str(one_run_results_dir))
    asyncio.run(monitor.refresh())
    assert monitor.engines.empty and monitor.engine_lines == NO_ENGINE_WORK


def test_no_idle_actors_is_said(one_run_results_dir):
    monitor = ClusterMonitor(results_dir=str(one_run_results_dir))
    assert asyncio.run(monitor.shutdown_idle()) == []
    assert monitor.message == "no idle actors to shut down"
    assert asyncio.run(monitor.cancel()) == "no running run to cancel"


def test_an_address_that_does_not_answer_is_the_message(one_run_results_dir):
    monitor = ClusterMonitor(results_dir=str(one_run_results_dir), ray_address="127.0.0.1:1")
    asyncio.run(monitor.refresh())

    assert monitor.message.startswith("ray_address: cannot reach a Ray cluster at '127.0.0.1:1'")
    assert monitor.message_kind == "danger"
    assert monitor.shards["agents"].tolist() == [5, 5]  # the runs are shown all the same
    monitor.message = ""
    asyncio.run(monitor.refresh())
    assert monitor.message == ""  # tried once per address, not on every refresh


@pytest.mark.ray
def test_the_nodes_of_the_test_cluster(ray_cluster, one_run_results_dir):
    monitor = ClusterMonitor(results_dir=str(one_run_results_dir), ray_address=ray_cluster.address)
    asyncio.run(monitor.refresh())

    assert len(monitor.nodes) == 2 and monitor.nodes["alive"].all()
    assert "2 node(s) alive" in monitor.cluster
    assert monitor.message == ""  # already connected: nothing to join


def _start_run(tmp_path: Path) -> subprocess.Popen[bytes]:
    """`workbench run` of the slow config into tmp_path/out, started from a shell (no launch
    record), with SIGINT at its default."""
    config = tmp_path / "slow.yaml"
    config.write_text(SLOW_CONFIG, encoding="utf-8")
    args = [sys.executable, "-m", "workbench.cli", "run", str(config), "--out", "out"]
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with (tmp_path / "stderr.log").open("wb") as stderr:
            return subprocess.Popen(
                [*args, "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr
            )
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _shown(monitor: ClusterMonitor, alive: Callable[[], bool], why: Callable[[], str]) -> None:
    """Refresh until the monitor shows a run with its two shards (60 s at most)."""
    deadline = time.monotonic() + 60
    while monitor.run_id is None or len(monitor.shards) < 2:
        assert alive(), why()
        assert time.monotonic() < deadline, "the run never showed its shards"
        time.sleep(0.3)
        asyncio.run(monitor.refresh())


@pytest.mark.slow
def test_a_live_launched_run_is_shown_and_cancelled(tmp_path):
    from workbench.config import load_run_config
    from workbench.runs.launch_states import launch_state, log_error
    from workbench.runs.launcher import launch

    config = tmp_path / "slow.yaml"
    config.write_text(SLOW_CONFIG, encoding="utf-8")
    out = tmp_path / "out"
    record = launch(load_run_config(config), out)
    monitor = ClusterMonitor(results_dir=str(out))
    try:
        _shown(
            monitor,
            lambda: launch_state(record).status == "running",
            lambda: str(log_error(record.log_path)),
        )
        shards = monitor.shards
        assert set(shards["run_status"]) == {"running"}
        assert shards["agents"].tolist() == [4, 4] and set(shards["pid"]) == {record.pid}
        assert shards["cpu_percent"].notna().all()  # the writer on this host, measured
        assert monitor.run_id == record.launch_id
        message = asyncio.run(monitor.cancel())
        assert message == (
            f"{record.launch_id}: sent SIGINT to its run (pid {record.pid}); it stops as cancelled"
        )
        assert monitor.message_kind == "success"
        deadline = time.monotonic() + 30
        while launch_state(record).status == "running" and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        if launch_state(record).status == "running":
            os.kill(record.pid, signal.SIGKILL)

    bundle = Bundle.open(record.bundle)
    assert bundle.status == "cancelled"
    asyncio.run(monitor.refresh())
    assert monitor.run_id is None
    assert set(monitor.shards["run_status"]) == {"cancelled"}
    assert set(monitor.shards["in_flight"]) == {0}


@pytest.mark.slow
def test_a_run_started_from_a_shell_is_shown_but_not_cancelled(tmp_path):
    proc = _start_run(tmp_path)
    monitor = ClusterMonitor(results_dir=str(tmp_path / "out"))
    try:
        _shown(
            monitor,
            lambda: proc.poll() is None,
            lambda: (tmp_path / "stderr.log").read_text()[-2000:],
        )
        message = asyncio.run(monitor.cancel())
        assert "no launch record" in message and "Ctrl-C" in message
        assert monitor.message_kind == "warning"
        assert proc.poll() is None  # nothing was sent
    finally:
        proc.kill()
        proc.wait()
