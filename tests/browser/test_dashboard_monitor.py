"""`workbench dashboard --ray ADDRESS` in a browser: the Cluster tab lists the Ray cluster's
nodes and a Ray run's shard actors with the agents each hosts, and cancels the run (a real
`workbench run` process on the test's two-node cluster; the actors' reports reach the page
through the run's events)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from browser_pages import Watched, deep_text
from dashboard_pages import RUN_TIMEOUT_MS, choose, fill, newest_launch, results_of, run_tab
from served import Served

from workbench.runs.launch_states import launches

pytestmark = [pytest.mark.slow, pytest.mark.ray]


@pytest.fixture(scope="module")
def dashboard(start_dashboard: Callable[..., Served], ray_cluster: Any) -> Served:
    """A dashboard watching the session's Ray cluster: its Ray runs join it (no cluster of
    their own to start, which can time out on a busy machine)."""
    return start_dashboard(None, "--ray", ray_cluster.address)


def test_the_monitor_lists_a_ray_runs_shard_actors_and_cancels_it(
    watched: Watched, dashboard: Served
) -> None:
    results = results_of(dashboard)
    launcher = run_tab(watched, dashboard)
    choose(launcher, "Policy", "random")
    fill(launcher, "Latency (s)", 1)
    fill(launcher, "Rounds", 30)
    choose(launcher, "Backend", "ray")
    fill(launcher, "Agents per shard", 20)  # 50 agents: shards of 20, 20 and 10
    launcher.locator(".wb-launcher-run").get_by_role("button").click()
    watched.until(
        lambda: "running" in deep_text(launcher.locator(".wb-launcher-status")),
        "the Ray run to start",
        RUN_TIMEOUT_MS,
    )
    watched.page.get_by_role("tab", name="Cluster").click()
    nodes = watched.page.locator(".wb-monitor-nodes .tabulator-row")
    watched.until(lambda: nodes.count() == 2, "the cluster's two nodes", RUN_TIMEOUT_MS)
    rows = watched.page.locator(".wb-monitor-shards .tabulator-row")
    watched.until(lambda: rows.count() == 3, "three shard actors in the monitor", RUN_TIMEOUT_MS)

    def table() -> list[dict[str, str]]:
        """The shard rows as drawn, read in one go: the table is redrawn on every refresh, and
        cells read one by one can straddle a redraw (in CI every pid read '' right after all
        three had been read)."""
        return rows.evaluate_all(
            """rows => rows.map(row => Object.fromEntries(
                [...row.querySelectorAll('.tabulator-cell[tabulator-field]')].map(
                    cell => [cell.getAttribute('tabulator-field'), cell.innerText.trim()])))"""
        )

    seen: list[list[dict[str, str]]] = []

    def reported() -> bool:
        """The newest snapshot has three rows, each with its actor's pid."""
        seen.append(table())
        return len(seen[-1]) == 3 and all(row.get("pid") for row in seen[-1])

    # each actor's own report (its process, its node) arrives once it has answered
    watched.until(reported, "the actors' own reports", RUN_TIMEOUT_MS)
    snapshot = seen[-1]
    assert sorted(int(row["agents"]) for row in snapshot) == [10, 20, 20], snapshot
    assert [row["backend"] for row in snapshot] == ["ray"] * 3, snapshot
    assert len({row["pid"] for row in snapshot}) == 3, snapshot  # one actor process per shard
    watched.shot("monitor-ray-shards")

    watched.page.locator(".wb-monitor-cancel").get_by_role("button").click()
    state = newest_launch(results, 0)
    assert state is not None
    watched.until(
        lambda: launches(results)[0].status == "cancelled", "the run to be cancelled", 120_000
    )
    watched.assert_no_errors()
