"""`workbench dashboard` in a browser: launching, following, reloading and losing runs.

A real dashboard on a free port; runs are real detached `workbench run` processes. (An
embedded run from the page, compared with the CLI's, is part of the researcher's path:
`test_researcher_path.py`.)
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pandas as pd
import pytest
from browser_pages import Watched, deep_text
from dashboard_pages import (
    RUN_TIMEOUT_MS,
    choose,
    fill,
    newest_launch,
    results_of,
    run_tab,
    status_text,
)
from ports import free_port
from served import Served

from workbench.results import Bundle
from workbench.runs.launch_states import launches

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dashboard(start_dashboard: Callable[..., Served]) -> Served:
    return start_dashboard()


def responses(bundle: Bundle) -> pd.DataFrame:
    frame = bundle.responses().drop(columns=["latency_s"])
    return frame.sort_values(["round", "agent_id"], ignore_index=True)


def test_an_unreachable_endpoint_is_refused_before_anything_starts(
    watched: Watched, dashboard: Served
) -> None:
    results = results_of(dashboard)
    launcher = run_tab(watched, dashboard)
    choose(launcher, "Model", "openai")
    url = f"http://127.0.0.1:{free_port()}/v1"
    fill(launcher, "Endpoint URL(s)", url)
    fill(launcher, "Model name", "smollm2-135m")
    launcher.locator(".wb-launcher-run").get_by_role("button").click()
    message = launcher.locator(".wb-launcher-message")
    message.get_by_text("cannot reach").wait_for()
    assert url in deep_text(message)
    watched.shot("run-unreachable-endpoint")
    assert launches(results) == [] and not (results / ".launches").exists()
    watched.assert_no_errors()


def test_a_prompt_too_long_for_the_context_is_refused_before_any_process_starts(
    watched: Watched, dashboard: Served
) -> None:
    """The page refuses what `workbench run` refuses before writing (`Simulation.preflight`):
    a 256-token context cannot hold round 20's prompt (its history of 19 rounds), so no
    launch and no bundle; Check, which runs the same preflight, says so too."""
    results = results_of(dashboard)
    before = sorted(results.iterdir()) if results.exists() else []
    launcher = run_tab(watched, dashboard)
    fill(launcher, "Context tokens", 256)
    fill(launcher, "Rounds", 20)
    launcher.locator(".wb-launcher-run").get_by_role("button").click()
    message = launcher.locator(".wb-launcher-message")
    refusal = "model.n_ctx: 256 tokens cannot hold round 20's prompt"
    message.get_by_text(refusal).wait_for(timeout=RUN_TIMEOUT_MS)
    assert "set model.n_ctx to at least" in deep_text(message)
    watched.shot("run-prompt-too-long")
    assert launches(results) == [] and not (results / ".launches").exists()
    assert (sorted(results.iterdir()) if results.exists() else []) == before  # no bundle
    assert "running" not in status_text(launcher)

    launcher.locator(".wb-launcher-check").get_by_role("button").click()
    verdict = launcher.locator(".wb-launcher-check-message")
    verdict.get_by_text(refusal).wait_for(timeout=RUN_TIMEOUT_MS)
    assert launches(results) == [] and "running" not in status_text(launcher)
    watched.assert_no_errors()


def test_a_reloaded_page_still_shows_the_run_and_a_killed_run_reads_dead(
    watched: Watched, dashboard: Served
) -> None:
    results = results_of(dashboard)
    before = len(launches(results))
    launcher = run_tab(watched, dashboard)
    choose(launcher, "Policy", "random")
    fill(launcher, "Latency (s)", 3)  # a round every 3 s: a new row soon after the reload
    fill(launcher, "Rounds", 40)
    launcher.locator(".wb-launcher-run").get_by_role("button").click()
    watched.until(lambda: "running" in status_text(launcher), "the run to start",
                  RUN_TIMEOUT_MS)  # fmt: skip
    watched.reload()  # the run goes on; the reopened page re-attaches from its events
    launcher = run_tab(watched, dashboard)
    watched.until(lambda: "running" in status_text(launcher), "the reopened page's run")
    rounds = launcher.locator(".wb-launcher-rounds .tabulator-row")
    seen = rounds.count()
    watched.until(lambda: rounds.count() > seen, "live progress after the reload", 60_000)
    watched.shot("run-reattached")
    state = newest_launch(results, before)
    assert state is not None and state.launch is not None and state.status == "running"
    os.kill(state.launch.pid, signal.SIGKILL)
    error = launcher.locator(".wb-launcher-error")
    error.get_by_text("died without finishing").wait_for()
    assert "dead" in status_text(launcher)
    watched.shot("run-killed")
    watched.assert_no_errors()
