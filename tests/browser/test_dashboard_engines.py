"""`workbench dashboard`'s Cluster tab in a browser over a Ray run's bundle written by hand
(tests/engine_bundle.py: no Ray, no model): the work per model engine shows as a table, newest
round first, with a line about the newest round; the page is kept as a screenshot."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from browser_pages import RENDER_TIMEOUT_MS, Watched, deep_text
from engine_bundle import write_engine_bundle
from served import Served

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dashboard(
    start_dashboard: Callable[..., Served], tmp_path_factory: pytest.TempPathFactory
) -> Served:
    results = tmp_path_factory.mktemp("ray-run") / "results"
    write_engine_bundle(results)
    return start_dashboard(results)


def test_the_cluster_tab_tables_each_engines_work(
    watched: Watched, dashboard: Served, tmp_path: Path
) -> None:
    watched.open(dashboard.url)
    watched.page.get_by_role("tab", name="Cluster").click()
    rows = watched.page.locator(".wb-monitor-engines .tabulator-row")
    watched.until(lambda: rows.count() == 6, "three rounds of two engines", RENDER_TIMEOUT_MS)
    table = rows.evaluate_all(
        """rows => rows.map(row => Object.fromEntries(
            [...row.querySelectorAll('.tabulator-cell[tabulator-field]')].map(
                cell => [cell.getAttribute('tabulator-field'), cell.innerText.trim()])))"""
    )
    assert [(r["round"], r["engine"], r["prompts"]) for r in table[:2]] == [
        ("3", "0", "60"),
        ("3", "1", "40"),
    ]
    assert [r["prompt_tokens"] for r in table[2:4]] == ["9,812", "9,700"]
    assert [r["share"] for r in table[:4]] == ["0.60", "0.40", "0.51", "0.49"]
    summary = deep_text(watched.page.locator(".wb-monitor-engine-summary"))
    assert "ray-run round 3: 100 prompts, 25,000 prompt tokens" in summary, summary
    assert "largest share 0.60 (ideal 0.50)" in summary, summary
    watched.page.locator(".wb-monitor-engines").scroll_into_view_if_needed()
    shot = watched.shot("monitor-engine-work")
    kept = shutil.copy(shot, tmp_path / shot.name)
    assert Path(kept).stat().st_size > 10_000
    watched.assert_no_errors()
