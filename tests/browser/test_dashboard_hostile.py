"""`workbench dashboard` over a results folder an attacker wrote into: a bundle folder named
`<img src=x onerror=...>`, a manifest whose run id, error, name and model are tags and
`javascript:` links, a damaged bundle named like an `<svg onload>` tag, a persona column and
population categories named like tags, a spec file whose dimension is one. Every tab is opened
(the Results tab's inner tabs too), the spec is loaded, folders outside the workspace are typed:
no script runs (`window.__pwned` stays undefined) and the hostile texts read as text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import hostile
import pytest
from browser_pages import Watched, deep_text
from served import Served

pytestmark = pytest.mark.slow

PWNED = "() => window.__pwned === undefined"


@pytest.fixture(scope="module")
def dashboard(
    start_dashboard: Callable[..., Served], tmp_path_factory: pytest.TempPathFactory
) -> Served:
    results = tmp_path_factory.mktemp("attacked") / "results"
    hostile.plant_results(results)
    return start_dashboard(results)


def page_text(watched: Watched) -> str:
    return deep_text(watched.page.locator("body"))


def shows(watched: Watched, text: str, what: str) -> None:
    """Wait until `text` reads as text somewhere in the page (shadow roots included)."""
    wanted = " ".join(text.split())
    watched.until(lambda: wanted in page_text(watched), what, shown=lambda: page_text(watched))


def type_into(watched: Watched, label: str, text: str) -> None:
    box = watched.page.get_by_label(label, exact=True).first
    box.fill(text)
    box.press("Enter")
    box.press("Tab")


def test_no_planted_text_runs_as_script_on_any_tab(watched: Watched, dashboard: Served) -> None:
    page = watched.page
    watched.open(dashboard.url)
    watched.wait_text("Counts per category against the requested shares")

    # Population: save outside the workspace: refused; load the planted spec (its dimension
    # is a tag, its category too)
    type_into(watched, "YAML file", f"../{hostile.FOLDER}.yaml")
    page.get_by_role("button", name="Save", exact=True).click()
    shows(watched, f"'../{hostile.FOLDER}.yaml' is outside the workspace", "Save refused")
    type_into(watched, "YAML file", hostile.SPEC_FILE)
    page.get_by_role("button", name="Load", exact=True).click()
    shows(watched, f"got '{hostile.DIMENSION}'", "the planted dimension name, as text")
    assert page.evaluate(PWNED)

    # Run: the launcher lists the folder's launches and bundles
    page.get_by_role("tab", name="Run").click()
    page.locator(".wb-launcher").get_by_text("Run name").wait_for()
    assert page.evaluate(PWNED)

    # Results: the planted bundle is the newest, so it is the one shown; every inner tab
    page.get_by_role("tab", name="Results").click()
    shows(watched, f"{hostile.RUN_ID} is failed: {hostile.ERROR}", "the planted manifest")
    shows(watched, f"{hostile.DAMAGED}: not readable as a bundle", "the damaged folder")
    for inner in ("Exact", "Compare", "Provenance", "Tables", "Plots"):
        page.locator(".bk-tab").filter(has_text=inner).first.click()  # bokeh's own tabs
        page.wait_for_timeout(1500)
        if inner == "Tables":
            page.get_by_role("button", name="personas", exact=True).click()
            shows(watched, hostile.PERSONA_COLUMN, "the planted persona column's title")
        assert page.evaluate(PWNED), (inner, page.evaluate("() => window.__pwned"))
    type_into(watched, "Results folder", f"../{hostile.FOLDER}")
    shows(watched, f"'../{hostile.FOLDER}' is outside the workspace", "a folder outside")

    # Cluster: the monitor reads the same folder; a folder outside is refused there too
    page.get_by_role("tab", name="Cluster").click()
    watched.wait_text("Shard actors")
    type_into(watched, "Results folder", f"../{hostile.DAMAGED}")
    shows(watched, f"'../{hostile.DAMAGED}' is outside the workspace", "the monitor's refusal")
    assert "Ray address" not in page_text(watched)  # the cluster comes from --ray only
    page.wait_for_timeout(2000)  # a refresh or two of the monitor
    assert page.evaluate(PWNED)
    assert page.evaluate("() => document.querySelectorAll('img[onerror]').length") == 0
    watched.shot("dashboard-hostile-texts")
    watched.assert_no_errors()


def test_opening_the_results_tab_raises_no_page_error(watched: Watched, dashboard: Served) -> None:
    watched.open(dashboard.url)
    watched.page.get_by_role("tab", name="Results").click()
    shows(watched, f"{hostile.RUN_ID} is failed", "the Results tab")
    watched.page.wait_for_timeout(3000)
    watched.assert_no_errors()


def test_the_planted_folder_is_still_there_untouched(dashboard: Served) -> None:
    """The dashboard read the planted folders and wrote nothing beside them (Save was refused)."""
    results = Path(dashboard.process.args[dashboard.process.args.index("--results") + 1])
    assert (results / hostile.FOLDER / "manifest.json").is_file()
    assert not (results.parent / f"{hostile.FOLDER}.yaml").exists()
