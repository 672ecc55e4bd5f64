"""A researcher's whole path through the real dashboard, as one person walks it.

Define a population with a new dimension (its categories at equal shares), check the run, run
it on the embedded model with exact distributions kept, watch a round play with its time left,
make a tab trip and come back to the settings as they were, reload and find the edits kept,
open Results on the Exact view, and export the tidy table. The launched bundle is the CLI's
own for the same config and seed. Every step leaves a screenshot (`path-*.png`), looked at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from browser_pages import Watched, deep_text
from cli_helpers import workbench
from dashboard_pages import (
    RUN_TIMEOUT_MS,
    fill,
    newest_launch,
    results_of,
    status_text,
    unfold_settings,
)
from served import Served

from workbench.results import Bundle

pytestmark = pytest.mark.slow

AGENTS = 40
ROUNDS = 2


def responses(bundle: Bundle) -> pd.DataFrame:
    frame = bundle.responses().drop(columns=["latency_s"])
    return frame.sort_values(["round", "agent_id"], ignore_index=True)


def click(scope: object, name: str) -> None:
    scope.get_by_role("button", name=name, exact=True).first.click()  # type: ignore[attr-defined]


def share_boxes(card: object) -> list[str]:
    return [card.get_by_label(c, exact=True).input_value() for c in ("nurse", "engineer")]  # type: ignore[attr-defined]


def test_a_researchers_path_from_population_to_export(
    watched: Watched, start_dashboard: Callable[..., Served], tmp_path: Path
) -> None:
    dashboard = start_dashboard(fresh=False)
    results = results_of(dashboard)
    page = watched.page
    watched.open(dashboard.url)

    # 1. the population: a new dimension, its categories at equal shares; the run's N
    editor = page.locator(".wb-population-editor")
    fill(editor, "New dimension", "occupation")
    click(editor, "Add dimension")
    card = page.locator(".wb-dimension-card").filter(has_text="occupation").first
    card.wait_for()
    for category in ("nurse", "engineer"):
        fill(card, "New category", category)
        click(card, "Add category")
        card.get_by_label(category, exact=True).wait_for()
    watched.until(lambda: share_boxes(card) == ["0.5", "0.5"], "equal shares",
                  shown=lambda: share_boxes(card))  # fmt: skip
    fill(editor, "Agents", AGENTS)
    watched.wait_idle()
    watched.shot("path-1-population")

    # 2. the run's settings: it names what it plays; exact distributions on; Check
    page.get_by_role("tab", name="Run").click()
    launcher = page.locator(".wb-launcher")
    who = launcher.locator(".wb-launcher-who")
    watched.until(lambda: "occupation (2)" in deep_text(who) and f"{AGENTS} agents" in
                  deep_text(who), "the Run tab naming the population",
                  shown=lambda: deep_text(who))  # fmt: skip
    fill(launcher, "Threads", 1)  # one thread: two spin against each other on 2 busy cores
    fill(launcher, "Agents per shard", AGENTS // 2)  # two shards
    fill(launcher, "Rounds", ROUNDS)
    fill(launcher, "Group by", "occupation")  # what the researcher studies
    watched.check("Exact distributions")
    launcher.locator(".wb-launcher-check").get_by_role("button").click()
    estimate = launcher.locator(".wb-launcher-estimate")
    estimate.get_by_text("s in all").wait_for(timeout=RUN_TIMEOUT_MS)
    watched.shot("path-2-checked")

    # 3. Run, and watch a round play: the round in play, its answers, the time left
    before = len(list((results / ".launches").iterdir())) if (results / ".launches").exists() else 0
    launcher.locator(".wb-launcher-run").get_by_role("button").click()
    seen: list[str] = []

    def playing() -> bool:
        line = status_text(launcher)
        seen.append(line)
        return "running" in line and "left by the estimate" in line

    watched.until(playing, "a round playing with its time left", RUN_TIMEOUT_MS,
                  shown=lambda: seen[-3:])  # fmt: skip
    assert any(f"of {ROUNDS}" in line and "answers in" in line for line in seen), seen
    watched.shot("path-3-playing")

    # 4. a tab trip while it plays: the settings come back as they were
    page.get_by_role("tab", name="Results").click()
    watched.wait_idle()
    page.get_by_role("tab", name="Run").click()
    unfold_settings(launcher)  # folded when the run started
    rounds_box = launcher.get_by_label("Rounds", exact=True)
    assert rounds_box.input_value() == str(ROUNDS)
    assert watched.checkbox("Exact distributions").is_checked()
    launcher.locator(".wb-launcher-settings-toggle button").first.click()  # fold them again
    rounds_box.wait_for(state="hidden")
    watched.until(lambda: "complete" in status_text(launcher), "the run to complete",
                  RUN_TIMEOUT_MS)  # fmt: skip
    assert "took" in status_text(launcher) and "estimated" in status_text(launcher)
    rounds = launcher.locator(".wb-launcher-rounds .tabulator-row")
    watched.until(lambda: rounds.count() == ROUNDS, "every round in the round table")
    for field, shape in (("mean", r"\d+\.\d\d"), ("target", r"\d+\.\d\d"), ("seconds", r"\d+\.\d")):
        text = rounds.first.locator(f'.tabulator-cell[tabulator-field="{field}"]').inner_text()
        assert re.fullmatch(shape, text.strip()), (field, text)  # numbers formatted to read
    result = launcher.locator(".wb-launcher-result")
    result.get_by_text("Guesses by education").wait_for()
    result.locator("canvas").first.wait_for()  # the bokeh plots drew
    watched.shot("path-4-complete")

    # 5. a reload: the population and the settings are kept
    watched.reload()
    page.locator(".wb-dimension-card").filter(has_text="occupation").first.wait_for()
    assert page.locator(".wb-population-editor").get_by_label(
        "Agents", exact=True
    ).input_value() == str(AGENTS)
    page.get_by_role("tab", name="Run").click()
    unfold_settings(launcher)
    rounds_box = launcher.get_by_label("Rounds", exact=True)
    assert rounds_box.input_value() == str(ROUNDS)
    watched.shot("path-5-reloaded")

    # 6. Results: the run's Exact view, per occupation
    state = newest_launch(results, before)
    assert state is not None and state.status == "complete" and state.bundle is not None
    launched = Bundle.open(state.bundle)
    page.get_by_role("tab", name="Results").click()
    explorer = page.locator(".wb-results")
    explorer.get_by_text(launched.run_id).first.wait_for(timeout=RUN_TIMEOUT_MS)
    page.locator(".bk-tab").filter(has_text="Exact").first.click()
    groups = explorer.locator(".wb-exact-groups")
    by_job = lambda: "nurse" in deep_text(groups) and "engineer" in deep_text(groups)  # noqa: E731
    watched.until(by_job, "the exact view by occupation", 60_000, shown=lambda: deep_text(groups))
    watched.wait_idle()
    watched.shot("path-6-exact")

    # 7. the tidy export: one row per agent and round, with the persona columns
    page.locator(".bk-tab").filter(has_text="Tables").first.click()
    explorer.get_by_role("button", name="tidy", exact=True).click()
    link = explorer.locator('a.wb-download[href$="/tidy.csv"]')
    link.wait_for()
    with page.expect_download() as download:
        link.click()
    rows = Path(download.value.path()).read_text().splitlines()
    assert "occupation" in rows[0] and len(rows) == 1 + AGENTS * ROUNDS
    watched.assert_no_errors()

    # the page's run is the CLI's: the same config and seed give the same answers
    assert launched.config.n_agents == AGENTS and launched.config.output.exact_distributions
    cli = workbench("run", state.launch.config_path, "--out", tmp_path / "cli", "--no-progress",
                    cwd=tmp_path)  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    (cli_bundle,) = [p for p in (tmp_path / "cli").iterdir() if p.is_dir()]
    pd.testing.assert_frame_equal(responses(launched), responses(Bundle.open(cli_bundle)))
