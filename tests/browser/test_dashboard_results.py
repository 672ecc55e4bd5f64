"""`workbench dashboard`'s Results tab in a browser: empty, and opened after runs launched from
the page, each time waiting until the page is idle before reading it (errors the tables log
while the tab draws come after its first pixels).

A real dashboard; runs are real detached `workbench run` processes (level-k, 2,000 agents).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from browser_pages import SCREENSHOTS, Watched, deep_text
from dashboard_pages import RUN_TIMEOUT_MS, choose, newest_launch, results_of, run_tab
from dashboard_pages import status_text as launch_status
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from served import Served

from workbench.results import Bundle
from workbench.runs.launch_states import launches
from workbench.ui.layout_guard import GUARD_FLAG

pytestmark = pytest.mark.slow

TRIES = 4
"""How many times the open-after-run path is repeated (the error it guards against came about
every other time: four clean tries miss it once in 16; each try launches a run, about 25 s)."""

DRAW_S = 3.0
"""The target: a finished bundle drawn within this many seconds of the tab opening. Measured
and printed here, not asserted (a shared machine's timings are no test); the bound asserted is
DRAW_BOUND_S, what no healthy page takes."""
DRAW_BOUND_S = 20.0

GUARDED = (
    f"() => Boolean(Bokeh.require('models/plots/plot_canvas').PlotView.prototype.{GUARD_FLAG})"
)
"""Whether the page's LayoutGuard patched BokehJS (`ui/layout_guard.py`)."""

BACKENDS = """() => [...Bokeh.documents[0].all_models]
  .filter(m => typeof m.output_backend === "string").map(m => m.output_backend)"""
"""How the page's plots draw: the dashboard asks for a 2D canvas (`dashboard.canvas_plots`)."""

SELECTED = "e => e.options[e.selectedIndex] ? e.options[e.selectedIndex].text : ''"


@pytest.fixture(scope="module")
def dashboard(start_dashboard: Callable[..., Served]) -> Served:
    return start_dashboard()


def open_results(watched: Watched) -> None:
    watched.page.get_by_role("tab", name="Results").click()


def test_an_empty_results_tab_says_so_once_with_what_fills_it(
    watched: Watched, start_dashboard: Callable[..., Served]
) -> None:
    empty = start_dashboard()
    results_of(empty).mkdir(parents=True, exist_ok=True)  # an empty results folder
    watched.open(empty.url)
    open_results(watched)
    status = watched.page.locator(".wb-results-status")
    status.get_by_text("no bundles here yet").wait_for()
    watched.wait_idle()
    page_text = deep_text(watched.page.locator("body"))
    assert page_text.count("no bundles here yet") == 1, page_text
    assert "launch a run from the Run tab" in page_text
    assert watched.page.locator(".wb-results-bundles").count() == 0 or not (
        watched.page.locator(".wb-results-bundles").first.is_visible()
    )
    assert watched.page.get_by_role("tab", name="Plots").count() == 0  # no empty views
    watched.page.set_viewport_size({"width": 1400, "height": 900})
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    watched.page.screenshot(path=str(SCREENSHOTS / "results-empty.png"))
    watched.assert_no_errors()


def launch_level_k(watched: Watched, dashboard: Served) -> Bundle:
    """Open the page, launch a level-k run of 2,000 agents, wait until it completes."""
    results = results_of(dashboard)
    before = len(launches(results))
    launcher = run_tab(watched, dashboard, agents=2000)
    choose(launcher, "Policy", "level_k")
    launcher.locator(".wb-launcher-run").get_by_role("button").click()
    watched.until(lambda: "complete" in launch_status(launcher), "the run to complete",
                  RUN_TIMEOUT_MS, shown=lambda: launch_status(launcher))  # fmt: skip
    state = newest_launch(results, before)
    assert state is not None and state.bundle is not None
    return Bundle.open(state.bundle)


def drawn(watched: Watched, run_id: str) -> bool:
    """Whether the Results tab shows `run_id` chosen in the picker and its histogram drawn."""
    page = watched.page
    picker = page.locator(".wb-results").get_by_label("Bundle", exact=True)
    try:  # the tab is redrawn as it opens: an element seen may be gone by the next call
        if not picker.count() or not picker.first.evaluate(SELECTED, timeout=2_000).startswith(
            run_id
        ):
            return False
    except PlaywrightTimeoutError:
        return False
    return page.locator(".wb-results-histogram canvas").count() > 0


def test_the_results_tab_opened_after_a_run_draws_it_fast_and_without_errors(
    watched: Watched, dashboard: Served
) -> None:
    """The researcher's path, TRIES times on a fresh page: launch, wait, open Results. Each
    time the tab shows the new bundle (picker, last round, the policy named in the model
    column, the histogram) within DRAW_S, settles, and the browser logged no error: not even
    BokehJS's "reading 'top_panel'" on measuring a plot not yet laid out, which used to blank
    the page in about half the runs (the page's LayoutGuard prevents it)."""
    draws: list[float] = []
    errors: dict[int, list[tuple[str, str]]] = {}
    for attempt in range(TRIES):
        bundle = launch_level_k(watched, dashboard)
        seen = len(watched.errors())
        start = time.monotonic()
        open_results(watched)
        watched.until(lambda b=bundle: drawn(watched, b.run_id), f"try {attempt}: the new "
                      "bundle drawn", 60_000, shown=watched.errors)  # fmt: skip
        draws.append(time.monotonic() - start)
        settle = watched.wait_idle()
        explorer = watched.page.locator(".wb-results")
        picker = explorer.get_by_label("Bundle", exact=True).first
        assert picker.evaluate(SELECTED).startswith(bundle.run_id), attempt
        round_picker = explorer.get_by_label("Round", exact=True).first
        assert round_picker.evaluate(SELECTED) == str(bundle.rounds_count), attempt
        models = explorer.locator('.wb-results-bundles .tabulator-cell[tabulator-field="model"]')
        texts = [m.inner_text().strip() for m in models.all()]
        assert texts and set(texts) == {"level_k (policy)"}, texts
        # away and back: the same bundle again, drawn from what was computed
        watched.page.get_by_role("tab", name="Run").click()
        open_results(watched)
        watched.until(lambda b=bundle: drawn(watched, b.run_id), "the bundle drawn again",
                      shown=watched.errors)  # fmt: skip
        watched.wait_idle()
        assert watched.page.evaluate(GUARDED), attempt
        assert set(watched.page.evaluate(BACKENDS)) == {"canvas"}, attempt
        if new := watched.errors()[seen:]:
            errors[attempt] = new
        print(f"try {attempt}: drawn in {draws[-1]:.2f} s (target {DRAW_S} s), idle "
              f"{settle:.2f} s after, {len(new)} browser errors")  # fmt: skip
    watched.shot("results-after-run")
    print("draw seconds:", [round(d, 2) for d in draws])
    assert errors == {}, errors  # every try, not only the first that failed
    assert max(draws) <= DRAW_BOUND_S, draws


def test_the_exact_view_the_exact_curve_and_the_tidy_export(
    watched: Watched, dashboard: Served
) -> None:
    """A bundle kept with exact distributions (`tests/exact_bundle.py`, written into the
    dashboard's folder): the histogram's exact curve is drawn; the Exact tab shows each
    group's band and each gap unmeasured, then Measure numerics runs bench noise on the
    embedded model in the dashboard and every gap gets the numerics' verdict; the Tables tab's
    tidy CSV downloads one row per agent and round. Screenshots of each, looked at."""
    from exact_bundle import write_exact_bundle

    from workbench.results.bundle import model_label

    bundle = write_exact_bundle(results_of(dashboard), run_id="exact-jobs")
    watched.open(dashboard.url)
    watched.page.set_viewport_size({"width": 1400, "height": 900})
    open_results(watched)
    explorer = watched.page.locator(".wb-results")
    label = f"{bundle.run_id} (complete, {model_label(bundle.model)}, N=60)"
    explorer.get_by_label("Bundle", exact=True).first.select_option(label=label)
    watched.until(lambda: drawn(watched, bundle.run_id), "the exact bundle drawn", 60_000)
    watched.wait_idle()
    watched.page.locator(".wb-results-histogram").first.screenshot(
        path=str(SCREENSHOTS / "results-exact-curve.png")
    )
    watched.page.locator(".bk-tab").filter(has_text="Exact").first.click()  # bokeh's tabs
    gaps = explorer.locator(".wb-exact-gaps")
    gaps.get_by_text("not measured").first.wait_for()
    assert "nurse" in deep_text(explorer.locator(".wb-exact-groups"))
    explorer.get_by_role("button", name="Measure numerics").click()
    watched.until(lambda: "numerics" in deep_text(gaps) and "not measured" not in deep_text(gaps),
                  "the numerics measured", 300_000, shown=lambda: deep_text(gaps))  # fmt: skip
    watched.wait_idle()
    said = deep_text(explorer.locator(".wb-exact"))
    assert "the largest shift of a group's exact mean under another evaluation is" in said
    assert "beyond numerics" in said or "within numerics" in said
    watched.shot("results-exact-view")

    watched.page.locator(".bk-tab").filter(has_text="Tables").first.click()
    explorer.get_by_role("button", name="tidy", exact=True).click()
    link = explorer.locator('a.wb-download[href$="/tidy.csv"]')
    link.wait_for()
    with watched.page.expect_download() as download:
        link.click()
    rows = Path(download.value.path()).read_text().splitlines()
    assert rows[0].startswith('"run_id","round","agent_id","occupation","gender","guess"')
    assert len(rows) == 1 + 60
    watched.assert_no_errors()
