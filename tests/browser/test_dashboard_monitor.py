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

from workbench.ui.launches import launches

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
    fill(launcher, "Agents per actor", 20)  # 50 agents: shards of 20, 20 and 10
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

    def cells(field: str) -> list[str]:
        cell = f'.tabulator-cell[tabulator-field="{field}"]'
        return [rows.nth(i).locator(cell).inner_text().strip() for i in range(rows.count())]

    # each actor's own report (its process, its node) arrives once it has answered
    watched.until(lambda: all(cells("pid")), "the actors' own reports", RUN_TIMEOUT_MS)
    assert sorted(int(a) for a in cells("agents")) == [10, 20, 20]
    assert cells("backend") == ["ray"] * 3
    assert len(set(cells("pid"))) == 3  # one actor process per shard
    watched.shot("monitor-ray-shards")

    watched.page.locator(".wb-monitor-cancel").get_by_role("button").click()
    state = newest_launch(results, 0)
    assert state is not None
    watched.until(
        lambda: launches(results)[0].status == "cancelled", "the run to be cancelled", 120_000
    )
    watched.assert_no_errors()
