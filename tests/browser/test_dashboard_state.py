"""The page keeps a researcher's settings: through a tab trip, and through a reload."""

from __future__ import annotations

from collections.abc import Callable

from browser_pages import Watched, deep_text
from dashboard_pages import fill, run_tab
from served import Served


def rounds_box_value(watched: Watched) -> str:
    return watched.page.locator(".wb-launcher").get_by_label("Rounds", exact=True).input_value()


def test_settings_survive_a_tab_trip_and_a_reload(
    watched: Watched, start_dashboard: Callable[..., Served]
) -> None:
    dashboard = start_dashboard(fresh=False)
    launcher = run_tab(watched, dashboard)
    fill(launcher, "Rounds", 3)
    fill(launcher, "Run name", "kept")
    who = launcher.locator(".wb-launcher-who")
    watched.until(lambda: "agents, seed" in deep_text(who), "the line naming who plays")
    toggle = launcher.locator(".wb-launcher-settings-toggle button").first
    toggle.click()  # fold them, as a run does
    name = launcher.get_by_label("Run name", exact=True)
    name.wait_for(state="hidden")

    watched.page.get_by_role("tab", name="Results").click()
    watched.wait_idle()
    watched.page.get_by_role("tab", name="Run").click()
    toggle.click()  # unfold: the form is there, as it was
    name.wait_for()
    assert name.input_value() == "kept" and rounds_box_value(watched) == "3"
    watched.shot("state-after-tab-trip")

    watched.reload()
    launcher = run_tab(watched, dashboard)
    watched.until(lambda: rounds_box_value(watched) == "3", "Rounds kept through the reload",
                  shown=lambda: rounds_box_value(watched))  # fmt: skip
    assert launcher.get_by_label("Run name", exact=True).input_value() == "kept"
    watched.shot("state-after-reload")
    watched.assert_no_errors()
