"""`workbench dashboard` in a browser: the population tab's editor drives the persona preview."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from browser_pages import Watched
from served import Served

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dashboard(start_dashboard: Callable[..., Served]) -> Served:
    return start_dashboard()


def set_number(watched: Watched, label: str, value: float) -> None:
    """Type `value` into the number input labelled `label`, commit it (Enter) and wait until
    the input, drawn again by the edit, holds it (the next edit must not hit the old one)."""
    box = watched.page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    box.press("Tab")  # the blur commits it too, where a busy page let the Enter go by
    watched.until(lambda: box.input_value() == str(value), f"{label} to read {value}")
    watched.page.wait_for_timeout(300)


def count_row(watched: Watched, category: str) -> str:
    """The counts table's row of an education category, as text."""
    rows = watched.page.locator(".tabulator-row", has_text=category)
    return rows.first.inner_text().replace("\n", " ").replace("\t", " ")


def test_a_share_change_updates_the_persona_counts(watched: Watched, dashboard: Served) -> None:
    watched.open(dashboard.url)
    watched.wait_text("Counts per category against the requested shares")
    assert "10" in count_row(watched, "bachelor's degree").split()  # 50 agents, 5 equal shares
    watched.check("Keep shares normalized")
    watched.page.wait_for_timeout(1000)  # the server has the setting before the next edit
    set_number(watched, "bachelor's degree", 0.6)
    doctoral = watched.page.get_by_label("doctoral degree", exact=True)

    def shown() -> dict[str, str]:
        return {
            "bachelor's row": count_row(watched, "bachelor's degree"),
            "doctoral share": doctoral.input_value(),
            "kept normalized": str(watched.checkbox("Keep shares normalized").is_checked()),
        }

    # kept normalized, the server rescales the other four shares to 0.1 each
    watched.until(lambda: doctoral.input_value() == "0.1", "the other shares rescaled", shown=shown)
    watched.until(
        lambda: "30" in count_row(watched, "bachelor's degree").split(),
        "the count to be 30",
        shown=shown,
    )
    row = count_row(watched, "bachelor's degree")
    assert "30" in row.split() and "0.6" in row.split(), row
    assert "5" in count_row(watched, "doctoral degree").split()
    watched.shot("population-share-changed")
    watched.assert_no_errors()


def test_an_impossible_spec_shows_why_in_the_page(watched: Watched, dashboard: Served) -> None:
    watched.open(dashboard.url)
    watched.wait_text("The spec is valid.")
    for category in ("elementary school", "high school", "bachelor's degree", "master's degree"):
        set_number(watched, category, 0)
    set_number(watched, "doctoral degree", 0)
    watched.wait_text("they cannot be normalized: give a category a share above 0")
    watched.page.get_by_role("button", name="Normalize all shares").click()
    watched.wait_text("cannot normalize: the shares sum to 0")
    watched.shot("population-impossible-shares")
    set_number(watched, "doctoral degree", 1)
    watched.wait_text("The spec is valid.")
    set_number(watched, "N (agents)", 0)
    watched.wait_text("n must be >= 1, got 0", timeout_ms=30_000)
    watched.shot("population-no-agents")
    watched.assert_no_errors()
