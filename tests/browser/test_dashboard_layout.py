"""The Run tab at 1400x900, as a researcher's laptop shows it: Run and the settings at the top,
the settings folding when a run starts so its progress, round table and plots come up without
scrolling, and every message readable (WCAG AA contrast, measured in the rendered page). The
Population tab at 1280x800 and in a ~900 px panel (JupyterLab's tab beside its file browser):
no control runs out of its card or has its label cut (measured from the elements' boxes)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from browser_pages import SCREENSHOTS, Watched, deep_text
from dashboard_pages import RUN_TIMEOUT_MS, fill, run_tab, status_text
from layout_boxes import outside
from playwright.sync_api import Locator
from served import Served

pytestmark = pytest.mark.slow

LAPTOP = {"width": 1400, "height": 900}
SMALL_LAPTOP = {"width": 1280, "height": 800}
PANEL = {"width": 900, "height": 800}
"""The dashboard in a JupyterLab tab beside the file browser, on a 1280-px screen."""
AA = 4.5
ROUNDS = 3
"""Rounds of the layout test's run: the embedded model, five shards (round 1 is mostly the
model's memo filling; later rounds land a shard every second or so)."""
IN_PLAY = re.compile(
    r"Round (?P<round>\d+) of \d+: (?P<shards>\d+) of (?P<of>\d+) shards in, "
    r"(?P<answers>[\d,]+) answers?"
)
"""The live pane's title while a round is in play."""
"""WCAG 2 AA: normal text at 4.5:1 or more against its ground."""

CONTRAST_JS = """
host => {
  const rgb = text => (text.match(/[\\d.]+/g) || []).slice(0, 4).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map(v => v / 255).map(
      v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const ground = el => {  // the first opaque background up the tree, through shadow roots
    for (let e = el; e; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c;
    }
    return [255, 255, 255];
  };
  const root = host.shadowRoot || host;
  const texts = [...root.querySelectorAll('p, li, strong, span, div')]
    .filter(e => e.textContent.trim() && e.children.length === 0);
  return texts.map(e => {
    const fg = lum(rgb(getComputedStyle(e).color)), bg = lum(ground(e));
    return [e.textContent.trim().slice(0, 40),
            (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05)];
  });
}
"""
"""[text, contrast ratio] of each text element in a pane (WCAG relative luminance)."""


@pytest.fixture(scope="module")
def dashboard(start_dashboard: Callable[..., Served]) -> Served:
    return start_dashboard()


def in_view(locator: Locator) -> bool:
    """Whether the element's top edge is within the 900-pixel window without scrolling."""
    box = locator.bounding_box()
    return box is not None and 0 <= box["y"] < LAPTOP["height"]


def viewport_shot(watched: Watched, name: str) -> None:
    """What the window shows, unscrolled (the whole-page shots of `shot` scroll it all)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    watched.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def contrasts(pane: Locator) -> list[tuple[str, float]]:
    return [tuple(pair) for pair in pane.evaluate(CONTRAST_JS)]


def test_messages_and_alerts_are_at_aa_contrast(watched: Watched, dashboard: Served) -> None:
    watched.page.set_viewport_size(LAPTOP)
    launcher = run_tab(watched, dashboard)
    fill(launcher, "Ratio p", 2)  # checked as typed: a danger notice
    problem = launcher.locator(".wb-launcher-problem")
    problem.get_by_text("must be in (0, 1]").wait_for()
    fill(launcher, "Ratio p", "1/2")
    watched.until(lambda: not problem.is_visible(), "the problem to clear")
    fill(launcher, "Config file", "saved.yaml")
    launcher.get_by_role("button", name="Save config").click()
    message = launcher.locator(".wb-launcher-message")  # an info notice
    message.get_by_text("saved").wait_for()
    fill(launcher, "Ratio p", 2)
    problem.get_by_text("must be in (0, 1]").wait_for()
    measured = contrasts(message) + contrasts(problem)
    assert len(measured) >= 2, measured
    low = [(text, round(ratio, 2)) for text, ratio in measured if ratio < AA]
    assert low == [], f"below WCAG AA ({AA}:1): {low}"
    fill(launcher, "Ratio p", "2/3")
    watched.until(lambda: not problem.is_visible(), "the problem to clear")
    # Check: the model answers, and the run's cost before it runs (the CLI's --estimate)
    fill(launcher, "Threads", 1)
    launcher.locator(".wb-launcher-check").get_by_role("button").click()
    estimate = launcher.locator(".wb-launcher-estimate")
    estimate.get_by_text("s in all").wait_for(timeout=RUN_TIMEOUT_MS)
    text = deep_text(estimate)
    assert "50 agents, distribution mode" in text and "at most" in text, text
    assert len(estimate.locator("tbody tr").all()) == 1, text  # the form's one round
    low = [(t, round(r, 2)) for t, r in contrasts(estimate) if r < AA]
    assert low == [], f"below WCAG AA ({AA}:1): {low}"
    viewport_shot(watched, "run-tab-estimate")
    watched.assert_no_errors()


def test_run_and_its_progress_are_above_the_fold_at_1400x900(
    watched: Watched, dashboard: Served
) -> None:
    watched.page.set_viewport_size(LAPTOP)
    launcher = run_tab(watched, dashboard)
    run = launcher.locator(".wb-launcher-run")
    assert in_view(run)
    assert in_view(launcher.get_by_label("Rounds", exact=True))  # the settings unfolded
    viewport_shot(watched, "run-tab-before")

    # the embedded model (the form's default): its shards land at different times
    fill(launcher, "Threads", 1)  # one thread: two spin against each other on 2 busy cores
    fill(launcher, "Agents per shard", 10)  # 50 agents: five shards
    fill(launcher, "Rounds", ROUNDS)
    run.get_by_role("button").click()
    watched.until(lambda: "running" in status_text(launcher), "the run to start",
                  RUN_TIMEOUT_MS)  # fmt: skip
    rounds = launcher.locator(".wb-launcher-rounds .tabulator-row")
    watched.until(lambda: rounds.count() >= 1, "a round in the table", RUN_TIMEOUT_MS)
    assert not launcher.get_by_label("Rounds", exact=True).is_visible()  # the settings folded
    for part in (run, launcher.locator(".wb-launcher-status"), rounds.first,
                 launcher.locator(".wb-launcher-shards")):  # fmt: skip
        assert in_view(part), deep_text(part)[:80]
    viewport_shot(watched, "run-tab-during")
    # the game as it unfolds: between rounds, the finished round as it was played ...
    live = launcher.locator(".wb-launcher-live")
    live.get_by_text("as it was played").wait_for(timeout=RUN_TIMEOUT_MS)
    live.locator("canvas").first.wait_for()
    assert "Round means so far: " in deep_text(live) and in_view(live.locator("canvas").first)
    # ... and the next round in play as its shards come in, with the target so far
    seen: list[tuple[re.Match[str], str]] = []

    def in_play() -> bool:
        """The pane shows a round with fewer shards in than the run has."""
        text = deep_text(live) if live.count() else ""
        found = IN_PLAY.search(text)
        if found is None or int(found["shards"]) >= int(found["of"]):
            return False
        viewport_shot(watched, "run-tab-live")  # as it was seen
        seen.append((found, text))
        return True

    watched.until(in_play, "a round in play with some of its shards in", RUN_TIMEOUT_MS)
    ((found, text),) = seen
    assert int(found["round"]) >= 2 and int(found["of"]) == 5, found[0]
    assert int(found["answers"].replace(",", "")) == 10 * int(found["shards"]), found[0]
    assert "target so far" in text and "Round means so far: " in text, text
    assert in_view(live.locator("canvas").first)

    watched.until(lambda: "complete" in status_text(launcher), "the run to complete",
                  RUN_TIMEOUT_MS)  # fmt: skip
    result = launcher.locator(".wb-launcher-result")
    result.get_by_text("Guesses by education").wait_for()
    result.locator("canvas").first.wait_for()
    assert in_view(result.locator("canvas").first)  # the plots come up without scrolling
    histogram = result.locator(".bk-Canvas, canvas").first.bounding_box()
    assert histogram is not None and histogram["y"] + histogram["height"] <= LAPTOP["height"]
    viewport_shot(watched, "run-tab-complete")
    # the recent launches read the header's status, and use the page's width
    recent = launcher.locator(".wb-launcher-launches")
    first_row = recent.locator(".tabulator-row").first
    watched.until(lambda: "complete" in deep_text(first_row), "the launch row to say complete",
                  RUN_TIMEOUT_MS)  # fmt: skip
    assert f"{ROUNDS}/{ROUNDS}" in deep_text(first_row)
    page_box, table_box = launcher.bounding_box(), recent.bounding_box()
    assert page_box is not None and table_box is not None
    assert table_box["width"] >= 0.9 * page_box["width"], (table_box, page_box)
    recent.scroll_into_view_if_needed()
    viewport_shot(watched, "run-tab-launches")

    launcher.locator(".wb-launcher-settings-toggle button").first.click()  # unfold them again
    launcher.get_by_label("Rounds", exact=True).wait_for()
    assert launcher.get_by_label("Agents per shard", exact=True).input_value() == "10"
    watched.assert_no_errors()


def test_no_population_control_runs_out_of_its_card(watched: Watched, dashboard: Served) -> None:
    watched.page.set_viewport_size(SMALL_LAPTOP)
    watched.open(dashboard.url)
    watched.wait_text("The spec is valid.")
    cards = watched.page.locator(".wb-dimension-card")
    watched.until(lambda: cards.count() == 2, "the gender and education cards")
    editor = watched.page.locator(".wb-population-editor").first
    preview = watched.page.locator(".wb-preview").first
    for size, name in ((SMALL_LAPTOP, "1280"), (PANEL, "900")):
        watched.page.set_viewport_size(size)
        watched.wait_idle(quiet_ms=500)
        for box in (*cards.all(), editor, preview):
            seen, found = outside(box)
            assert seen >= 10 and found == [], (name, found)
        left, right = editor.bounding_box(), preview.bounding_box()
        assert left is not None and right is not None
        beside = left["x"] + left["width"] <= right["x"] + 1
        below = left["y"] + left["height"] <= right["y"] + 1  # stacked where they do not fit
        assert beside or below, (name, left, right)  # never overlapping
        assert right["x"] + right["width"] <= size["width"] + 1  # within the window
        watched.shot(f"population-{name}")
    watched.assert_no_errors()
