"""The dashboard's Run tab as the browser tests drive it: open it, fill and pick settings,
read the status line, find the newest launch."""

from __future__ import annotations

from pathlib import Path

from browser_pages import Watched, deep_text
from playwright.sync_api import Locator
from served import Served

from workbench.runs.launch_states import LaunchState, launches

RUN_TIMEOUT_MS = 300_000
"""A 50-agent, 2-round game on the embedded model on a busy 2-core machine."""


def results_of(dashboard: Served) -> Path:
    return Path(dashboard.process.args[dashboard.process.args.index("--results") + 1])


def run_tab(watched: Watched, dashboard: Served, agents: int | None = None) -> Locator:
    """Open the dashboard on its Run tab; the launcher's part of the page. With `agents`, the
    Population tab's Agents (the run plays those) is set to it first."""
    watched.open(dashboard.url)
    if agents is not None:
        fill(watched.page.locator(".wb-population-editor"), "Agents", agents)
    watched.page.get_by_role("tab", name="Run").click()
    launcher = watched.page.locator(".wb-launcher")
    launcher.locator(".wb-launcher-run").wait_for()
    unfold_settings(launcher)
    return launcher


def unfold_settings(launcher: Locator) -> None:
    """Unfold the Run tab's settings when they are folded (as when a run is followed), read
    from the fold button's own label once it is drawn, and wait for the form."""
    toggle = launcher.locator(".wb-launcher-settings-toggle button").first
    toggle.wait_for()
    if "▸" in toggle.inner_text():
        toggle.click()
    launcher.get_by_label("Run name", exact=True).wait_for()


def fill(launcher: Locator, label: str, value: object) -> None:
    """Type into the launcher's input labelled `label` and commit it."""
    box = launcher.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    box.press("Tab")  # the blur commits it too, where a busy page let the Enter go by


def choose(launcher: Locator, label: str, option: str) -> None:
    """Pick `option` in the launcher's select labelled `label`."""
    launcher.get_by_label(label, exact=True).select_option(option)


def status_text(launcher: Locator) -> str:
    return deep_text(launcher.locator(".wb-launcher-status"))


def newest_launch(results: Path, before: int) -> LaunchState | None:
    """The newest launch once there are more than `before`."""
    states = launches(results)
    return states[0] if len(states) > before else None
