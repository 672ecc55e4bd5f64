"""RunLauncher: the settings become the CLI's RunConfig; Run starts a real detached run whose
progress, round table and result the component reads from disk; bad settings and unreachable
endpoints show a message and start nothing; a new launcher re-attaches to a live run; Cancel
marks it cancelled. No browser: params are set and state asserted, `__panel__()` built."""

from __future__ import annotations

import asyncio
import gc
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import holoviews as hv
import pandas as pd
import panel as pn
import pytest
from cli_helpers import workbench
from fake_openai import FakeServer
from pane_text import live_markup, markup, shown_text
from ports import free_port

from workbench.config import ModelSpec, PopulationSpec, load_run_config
from workbench.errors import ModelError
from workbench.results import Bundle
from workbench.runs.launch_states import wait_for
from workbench.runs.launcher import estimate_launch
from workbench.runs.records import LAUNCHES_DIR
from workbench.ui import PopulationEditor
from workbench.ui.run_launcher import CSS, RunLauncher, quickstart_population
from workbench.ui.workspace import shown_path

EDUCATION_YAML = Path(__file__).resolve().parents[2] / "personas" / "paper-education.yaml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc"),
]

WAIT_S = 90.0


def until(
    check: Callable[[], bool], timeout_s: float = WAIT_S, step: Callable[[], None] = lambda: None
) -> None:
    """Call `step` and poll `check` until it holds; AssertionError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        step()
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"not reached within {timeout_s} s")


def finished(launcher: RunLauncher) -> bool:
    return launcher.status in ("complete", "failed", "cancelled", "dead")


def test_the_settings_are_the_clis_config(education_spec: PopulationSpec) -> None:
    launcher = RunLauncher(
        results_dir="unused", n_agents=12, seed=3, values={"game.rounds": 4, "game.ratio": "1/2"}
    )
    config = launcher.config()
    assert config.population == quickstart_population() == education_spec
    assert (config.n_agents, config.seed, config.game.rounds, config.game.ratio) == (12, 3, 4, 0.5)
    assert config.policy.kind == "llm" and config.model.kind == "embedded"
    assert config.model == ModelSpec() and config.backend.kind == "local"  # the specs' defaults

    launcher.ray_address = "127.0.0.1:6379"
    launcher.set(
        **{
            "policy.kind": "level_k",
            "policy.tau": 1.5,
            "backend.kind": "ray",
            "backend.agents_per_shard": 5,
            "game.prompt.style": "step_by_step",
            "game.prompt.rational_note": True,
            "game.offset": "5",
        }
    )
    config = launcher.config()
    assert config.policy.kind == "level_k" and config.policy.tau == 1.5
    assert config.backend.kind == "ray" and config.backend.agents_per_shard == 5
    assert config.backend.address == "127.0.0.1:6379"
    assert config.game.prompt.style == "step_by_step" and config.game.prompt.rational_note
    assert config.game.offset == 5

    launcher.set(
        **{
            "policy.kind": "llm",
            "model.kind": "openai",
            "model.base_urls": ["http://a:1/v1", "http://b:2/v1"],
            "model.name": "m",
            "backend.kind": "local",
        }
    )
    assert launcher.config().model.base_urls == ["http://a:1/v1", "http://b:2/v1"]

    editor = PopulationEditor()
    editor.load(EDUCATION_YAML)
    bound = RunLauncher.for_editor(editor, results_dir="unused")
    editor.n, editor.seed = 77, 9
    config = bound.config()
    assert config.population == editor.spec == education_spec
    assert (config.n_agents, config.seed) == (77, 9)  # the agents the preview shows


def test_an_impossible_population_or_n_0_shows_a_message_and_starts_nothing(
    launch_results_dir: Path,
) -> None:
    editor = PopulationEditor()
    editor.load(EDUCATION_YAML)
    launcher = RunLauncher.for_editor(
        editor, results_dir=str(launch_results_dir), values={"policy.kind": "level_k"}
    )
    editor.set_share("education", "doctoral degree", 0.13)  # shares no longer sum to 1
    assert editor.spec is None and "shares must sum to 1" in editor.message
    assert launcher.run() is None
    assert launcher.message == editor.message and launcher.message_failed
    editor.normalize("education")
    editor.n = 0
    assert launcher.run() is None
    assert launcher.message.startswith("run config: n_agents: ")
    assert not launch_results_dir.exists()


def test_bad_settings_show_the_clis_message_and_start_nothing(launch_results_dir: Path) -> None:
    launcher = RunLauncher(
        results_dir=str(launch_results_dir),
        values={"policy.kind": "level_k", "game.low": 50, "game.high": 10},
    )
    said = "run config: game: low must be < high, got low=50.0, high=10.0"
    assert launcher.problem == said  # as typed, before Run
    assert launcher.run() is None
    assert launcher.message == said
    assert launcher.message_failed and launcher.status == ""
    launcher.set(**{"game.low": 0, "game.high": 100, "policy.kind": "llm", "model.kind": "openai"})
    assert asyncio.run(launcher.arun()) is None
    assert "kind openai needs base_urls" in launcher.message
    assert not (launch_results_dir / LAUNCHES_DIR).exists()


def test_the_owners_limits_refuse_a_launch_before_anything_starts(launch_results_dir: Path) -> None:
    """A page asking for more agent-rounds than the dashboard's owner allows is refused with
    the option that raises the limit; within it the same settings launch."""
    launcher = RunLauncher(
        results_dir=str(launch_results_dir),
        n_agents=20,
        max_agent_rounds=59,
        values={"policy.kind": "random", "game.rounds": 3},
    )
    assert launcher.run() is None
    assert "20 x 3 = 60 agent-rounds is over" in launcher.message
    assert "--max-agent-rounds" in launcher.message and launcher.message_failed
    assert not (launch_results_dir / LAUNCHES_DIR).exists()
    launcher.max_agent_rounds = 60
    record = launcher.run()
    assert record is not None, launcher.message
    assert wait_for(launch_results_dir, record.launch_id, timeout_s=120).status == "complete"


def test_an_unreachable_endpoint_shows_before_anything_starts(launch_results_dir: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    launcher = RunLauncher(
        results_dir=str(launch_results_dir),
        values={"model.kind": "openai", "model.base_urls": [url], "model.name": "m"},
    )
    assert not launcher.check()
    assert launcher.check_failed and f"cannot reach {url}" in launcher.check_message
    assert asyncio.run(launcher.arun()) is None
    assert launcher.message_failed and f"cannot reach {url}" in launcher.message
    assert not launch_results_dir.exists() and not launcher.busy
    with FakeServer(model="m") as server:
        launcher.set(**{"model.base_urls": [server.url]})
        assert asyncio.run(launcher.acheck())
        assert launcher.check_message == f"reachable: {server.url} serve m"
        assert not launcher.check_failed


def estimate_pane(launcher: RunLauncher) -> pn.pane.Markdown:
    view = launcher.__panel__()
    view.get_root()
    (pane,) = [m for m in view.select(pn.pane.Markdown) if CSS["estimate"] in m.css_classes]
    return pane


def test_check_shows_the_runs_estimate_in_the_page(
    launch_results_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values = {"game.rounds": 3, "model.n_threads": 1}
    launcher = RunLauncher(results_dir=str(launch_results_dir), n_agents=40, values=values)
    assert asyncio.run(launcher.acheck()) and not launcher.busy
    assert "embedded model" in launcher.check_message and not launcher.estimate_failed
    expected = estimate_launch(launcher.config())  # the CLI's --estimate, computed again
    rows = [  # the page's table, cells unescaped
        [cell.strip().replace("\\", "") for cell in line.strip("| ").split(" | ")]
        for line in launcher.estimate.splitlines()
        if line.startswith("| ") and not line.startswith("| round")
    ]
    counts = ["round", "prompts", "prompts_bound", "tokens", "nodes"]
    assert [[int(c.replace(",", "")) for c in row[:5]] for row in rows] == [
        [getattr(r, name) for name in counts] for r in expected.rounds
    ]
    assert all(float(row[5].replace(",", "")) > 0 for row in rows)  # seconds, measured
    text = shown_text(estimate_pane(launcher))
    assert "40 agents, distribution mode" in text and "s in all" in text
    assert not launch_results_dir.exists()  # checked and estimated: nothing started

    # a verdict and an estimate belong to the settings they were made for
    launcher.n_agents = 41
    assert launcher.check_message == "" and launcher.estimate == ""

    # a baseline policy asks no model: no estimate
    launcher.set(**{"policy.kind": "random"})
    assert launcher.check() and launcher.estimate == ""
    assert not estimate_pane(launcher).visible

    # an estimate that fails says why, escaped
    def broken(config: object) -> None:
        raise ModelError("<img src=x onerror=alert(1)> [x](javascript:alert(1)) broke")

    monkeypatch.setattr("workbench.ui.estimate_view.estimate_launch", broken)
    launcher.set(**{"policy.kind": "llm"})
    assert launcher.check() and launcher.estimate_failed
    pane = estimate_pane(launcher)
    assert "could not estimate the run: <img src=x onerror=alert(1)>" in shown_text(pane)
    assert [f for _, f in markup(pane) if live_markup(f)] == []


def test_a_run_fills_in_its_tables_and_shows_its_result(launch_results_dir: Path) -> None:
    seen: list[str] = []
    launcher = RunLauncher(
        results_dir=str(launch_results_dir),
        n_agents=30,
        values={
            "policy.kind": "level_k",
            "game.rounds": 3,
            "backend.agents_per_shard": 10,
            "name": "lk",
        },
        on_finished=seen.append,
    )
    record = asyncio.run(launcher.arun())
    assert record is not None and launcher.launch_id == record.launch_id
    assert launcher.message == f"started {record.launch_id} (pid {record.pid})"
    until(lambda: finished(launcher), step=launcher.refresh)
    assert launcher.status == "complete" and launcher.error == ""
    assert (launcher.rounds_done, launcher.rounds_total) == (3, 3)
    bundle = Bundle.open(launcher.bundle)
    assert launcher.finished_bundle == launcher.bundle and seen == [launcher.bundle]
    rounds = launcher.round_stats
    assert list(rounds["round"]) == [1, 2, 3]
    assert list(rounds["mean"]) == pytest.approx(list(bundle.rounds()["mean"]))
    assert list(rounds["target"]) == pytest.approx(list(bundle.rounds()["target"]))
    shards = launcher.shards
    assert list(shards["shard"]) == [0, 1, 2] and list(shards["agents"]) == [10, 10, 10]
    assert list(shards["answered"]) == [10, 10, 10] and set(shards["state"]) == {"done"}
    assert launcher.recent.loc[0, "status"] == "complete"
    assert launcher.recent.loc[0, "launch_id"] == record.launch_id

    view = launcher.__panel__()
    view.get_root()
    classes = {c for obj in view.select(pn.viewable.Viewable) for c in obj.css_classes or []}
    # the error shows only for a failed run, the live round only while a run plays
    assert set(CSS.values()) - {"wb-launcher-error", "wb-launcher-live"} <= classes
    tables = {t.css_classes[0]: t for t in view.select(pn.widgets.Tabulator)}
    assert len(tables[CSS["rounds"]].value) == 3 and tables[CSS["rounds"]].pagination == "remote"
    shown = {name: f.format for name, f in tables[CSS["rounds"]].formatters.items()}
    assert shown["mean"] == "0.00" and shown["seconds"] == "0.0"  # the frame keeps exact values
    assert len(tables[CSS["shards"]].value) == 3
    (histogram, by_education) = [p.object for p in view.select(pn.pane.HoloViews)]
    (bars,) = histogram.traverse(lambda e: e, [hv.Histogram])
    last = bundle.rounds().iloc[-1]
    assert bars.dimension_values("count").sum() == last["n_valid"] == 30  # round 3's guesses
    (cells,) = by_education.traverse(lambda e: e, [hv.Rectangles])  # the heatmap by education
    assert set(cells.dimension_values("category")) == set(bundle.personas()["education"])
    status = [
        shown_text(m) for m in view.select(pn.pane.Markdown) if CSS["status"] in m.css_classes
    ]
    (line,) = status
    assert re.fullmatch(
        rf"complete · 3 of 3 rounds · took \d+ s · bundle {re.escape(shown_path(launcher.bundle))}",
        line,
    ), line
    launcher.refresh()
    assert seen == [launcher.bundle]  # told once, not at every refresh


def test_a_new_launcher_reattaches_to_a_live_run_and_cancels_it(launch_results_dir: Path) -> None:
    first = RunLauncher(
        results_dir=str(launch_results_dir),
        n_agents=20,
        values={"policy.kind": "random", "policy.latency_s": 1.0, "game.rounds": 6, "name": "slow"},
    )
    record = first.run()
    assert record is not None
    until(lambda: first.rounds_done >= 1, step=first.refresh)

    again = RunLauncher(
        results_dir=str(launch_results_dir)
    )  # a reloaded page, a restarted dashboard
    assert again.launch_id == record.launch_id and again.status == "running"
    assert again.bundle == first.bundle and again.rounds_total == 6
    done = again.rounds_done
    until(lambda: again.rounds_done > done, step=again.refresh)  # live progress, from disk
    assert len(again.round_stats) == again.rounds_done and len(again.shards) == 1

    assert again.cancel_run() and "cancel sent" in again.message
    until(lambda: finished(again), 30, step=again.refresh)
    assert again.status == "cancelled" and "CancelledError" in again.error
    assert again.finished_bundle is None and Bundle.open(again.bundle).status == "cancelled"
    view = again.__panel__()
    view.get_root()
    errors = [a for a in view.select(pn.pane.Markdown) if CSS["error"] in a.css_classes]
    assert [a.visible for a in errors] == [True] and "cancelled: " in shown_text(errors[0])
    buttons = {b.css_classes[0]: b for b in view.select(pn.widgets.Button)}
    assert buttons[CSS["cancel"]].disabled and not buttons[CSS["run"]].disabled
    assert (
        RunLauncher(results_dir=str(launch_results_dir)).status == ""
    )  # nothing live to re-attach to
    again.results_dir = str(
        launch_results_dir.parent / "elsewhere"
    )  # another folder: nothing followed
    assert (again.status, again.launch_id, again.bundle, len(again.recent)) == ("", None, None, 0)


def test_a_bundle_run_from_the_cli_is_reattached_too(
    launch_results_dir: Path, tmp_path: Path, make_config
) -> None:
    import subprocess

    from workbench.config import save_yaml

    config = make_config(policy={"kind": "random", "latency_s": 1.0}, n_agents=10, rounds=4)
    path = save_yaml(config, tmp_path / "slow.yaml")
    args = [
        sys.executable,
        "-m",
        "workbench.cli",
        "run",
        str(path),
        "--out",
        str(launch_results_dir),
    ]
    proc = subprocess.Popen(
        [*args, "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        until(lambda: RunLauncher(results_dir=str(launch_results_dir)).status == "running")
        launcher = RunLauncher(results_dir=str(launch_results_dir))
        assert launcher.launch_id is None and Path(launcher.bundle).parent == launch_results_dir
        # not launched here (no launch record): shown, but never signalled from the page
        assert not launcher.cancel_run() and launcher.message_failed
        assert "no launch record" in launcher.message and "Ctrl-C" in launcher.message
        assert proc.poll() is None
        proc.kill()
        proc.wait(timeout=30)
        launcher.refresh()
        assert launcher.status == "dead" and "workbench run --resume" in launcher.error
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_embedded_model_run_equals_the_clis(launch_results_dir: Path, tmp_path: Path) -> None:
    launcher = RunLauncher(
        results_dir=str(launch_results_dir), n_agents=8, values={"model.n_threads": 1}
    )
    record = launcher.run()
    assert record is not None, launcher.message
    until(lambda: finished(launcher), step=launcher.refresh)
    assert launcher.status == "complete", launcher.error
    assert int(launcher.shards["tokens"].sum()) > 0

    direct = workbench("run", record.config_path, "--out", tmp_path / "direct", cwd=tmp_path)
    assert direct.returncode == 0, direct.stderr
    (other,) = (tmp_path / "direct").iterdir()
    columns = ["agent_id", "round", "guess", "status", "raw", "completion_tokens"]
    launched, cli = Bundle.open(launcher.bundle), Bundle.open(other)
    pd.testing.assert_frame_equal(launched.responses()[columns], cli.responses()[columns])
    assert load_run_config(record.config_path) == launcher.config()


@pytest.mark.filterwarnings(
    # a message the page's callback queued for a socket already closed, dropped with the loop
    "ignore:Exception ignored in. <coroutine object WSHandler.send_message"
    ":pytest.PytestUnraisableExceptionWarning"
)
def test_a_served_page_follows_its_run_by_itself(launch_results_dir: Path) -> None:
    """A page opened during a run re-attaches to it, and its periodic callback reads the
    progress on the server's loop: no one calls refresh()."""
    import panel.models  # noqa: F401  (the document holds Panel's own bokeh models)
    from bokeh.client import pull_session

    record = RunLauncher(
        results_dir=str(launch_results_dir),
        n_agents=10,
        values={"policy.kind": "random", "policy.latency_s": 0.5, "game.rounds": 3},
    ).run()
    assert record is not None
    made: list[RunLauncher] = []

    def page() -> RunLauncher:
        made.append(RunLauncher(results_dir=str(launch_results_dir), refresh_s=0.2))
        return made[-1]

    port = free_port()
    server = pn.serve(
        page,
        port=port,
        address="127.0.0.1",
        websocket_origin=[f"127.0.0.1:{port}"],
        threaded=True,
        show=False,
        liveness=True,
    )
    try:
        until(lambda: _answers(f"http://127.0.0.1:{port}/liveness"), 30)
        with pull_session(url=f"http://127.0.0.1:{port}/"):
            until(lambda: len(made) == 1, 30)
            (launcher,) = made
            assert launcher.launch_id == record.launch_id  # re-attached on opening
            until(lambda: launcher.finished_bundle is not None)  # the periodic callback alone
            assert launcher.status == "complete" and launcher.finished_bundle == launcher.bundle
            assert list(launcher.round_stats["round"]) == [1, 2, 3]
    finally:
        server.stop()
        server.join(timeout=30)
        gc.collect()  # what the stopped loop dropped is collected here, not in a later test


def _answers(url: str) -> bool:
    import httpx

    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False
