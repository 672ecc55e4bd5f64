"""`workbench dashboard` in a browser: the population tab's editor drives the persona preview;
a new dimension, a table of zeros and a bad N each say so once, beside what they are about."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from browser_pages import Watched, deep_text
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


def test_a_new_dimension_a_zero_table_and_a_bad_n_each_say_so_once(
    watched: Watched, dashboard: Served
) -> None:
    watched.open(dashboard.url)
    watched.wait_text("The spec is valid.")
    page = watched.page
    editor = page.locator(".wb-population-editor").first
    # a new dimension: its card says what it needs; categories come at equal shares
    page.get_by_label("New dimension", exact=True).fill("occupation")
    page.locator(".wb-population-add-dimension").get_by_role("button").click()
    card = page.locator(".wb-dimension-card", has_text="occupation").first
    needs = "dimension 'occupation': shares must list at least one category"
    card.get_by_text(needs).wait_for()
    assert deep_text(editor).count(needs) == 1  # shown once, in its card
    for job in ("engineer", "nurse"):
        card.get_by_label("New category", exact=True).fill(job)
        card.locator(".wb-population-add-category").get_by_role("button").click()
        card.get_by_label(job, exact=True).wait_for()
    watched.wait_text("The spec is valid.")
    assert card.get_by_label("nurse", exact=True).input_value() == "0.5"
    watched.shot("population-new-dimension")

    # a table of zeros: its card says Normalize splits it equally, and it does
    for category in ("elementary school", "high school", "bachelor's degree", "master's degree",
                     "doctoral degree"):  # fmt: skip
        set_number(watched, category, 0)
    note = "dimension 'education': shares sum to 0, not 1; press Normalize to split them equally"
    watched.wait_text(note)
    watched.wait_text("Not valid yet: 1 problem, each shown beside what it is about below.")
    assert deep_text(editor).count("dimension 'education'") == 1  # not again in the CLI's words
    assert "shares must sum to 1" not in deep_text(page.locator(".wb-preview"))
    watched.shot("population-zero-shares")
    education = page.locator(".wb-dimension-card", has_text="education").first
    education.locator(".wb-population-normalize").get_by_role("button").click()
    watched.wait_text("The spec is valid.")
    doctoral = page.get_by_label("doctoral degree", exact=True)
    watched.until(lambda: doctoral.input_value() == "0.2", "the equal shares in their boxes")

    # Agents -5: kept in the box, with why and the fix beside it; the run plays none of it
    set_number(watched, "Agents", -5)
    watched.wait_text("Agents: must be at least 1, got -5; type how many agents to play")
    assert page.get_by_label("Agents", exact=True).input_value() == "-5"  # not snapped back
    assert deep_text(editor).count("Agents: must be at least 1") == 1
    watched.shot("population-bad-agents")
    set_number(watched, "Agents", 40)
    watched.wait_text("The spec is valid.")
    page.get_by_role("tab", name="Run").click()
    launcher = page.locator(".wb-launcher")
    launcher.get_by_label("Run name", exact=True).wait_for()
    assert launcher.get_by_label("Agents", exact=True).count() == 0  # one pair, on Population
    watched.assert_no_errors()
