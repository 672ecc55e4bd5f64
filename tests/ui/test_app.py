"""WorkbenchApp: the components wired together as the dashboard's tabs (no browser)."""

from __future__ import annotations

from pathlib import Path

import holoviews as hv
import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import TablerIcon
from panel.util import edit_readonly

from workbench.ui.app import TABS, WorkbenchApp, quickstart_population
from workbench.ui.layout_guard import LayoutGuard
from workbench.ui.server.dashboard import canvas_plots


def test_the_editor_feeds_the_preview_and_the_launcher(tmp_path: Path) -> None:
    app = WorkbenchApp(results_dir=str(tmp_path))
    assert app.editor.spec == quickstart_population()
    assert app.launcher.population == app.editor.spec and app.preview.spec == app.editor.spec
    app.editor.n = 20
    assert app.launcher.n_agents == 20 and len(app.preview.personas) == 20
    app.editor.set_share("education", "doctoral degree", 0.0)  # shares now sum to 0.8
    assert app.editor.spec is None and "sum to 1" in app.editor.message
    assert app.launcher.run() is None and "sum to 1" in app.launcher.message
    assert not (tmp_path / ".launches").exists()  # an invalid spec starts nothing


@pytest.mark.parametrize("tab", TABS)
def test_no_widget_of_any_tab_asks_for_a_cdn_icon(tab: str, tmp_path: Path) -> None:
    """Bokeh draws a Tabler icon name from cdn.jsdelivr.net, unreachable offline (and here):
    the page would log a failed load, so no button of any tab has one. Only the open tab is
    drawn (dynamic tabs), so each is opened in turn."""
    root = WorkbenchApp(results_dir=str(tmp_path), tab=tab).tabs().get_root(Document())
    assert not [m for m in root.references() if isinstance(m, TablerIcon)]


def test_the_served_page_carries_the_layout_guard_and_draws_on_canvas(tmp_path: Path) -> None:
    """The page shell holds the guard for BokehJS measuring a plot with no layout yet (its
    effect is checked in a browser: tests/browser/test_dashboard_results.py), and `serve` asks
    HoloViews for canvas plots."""
    page = WorkbenchApp(results_dir=str(tmp_path)).page()
    assert len(page.select(LayoutGuard)) == 1
    renderer = hv.renderer("bokeh")
    before = renderer.webgl
    try:
        canvas_plots()
        assert renderer.webgl is False
    finally:
        renderer.webgl = before


def test_the_page_shell_does_not_follow_the_busy_state(tmp_path: Path) -> None:
    """The page's own polling turns `pn.state.busy` on and off every second; the shell's busy
    property must not follow it (each change walks every model of the page on the server)."""
    page = WorkbenchApp(results_dir=str(tmp_path)).page()
    assert page.busy_indicator is None
    with edit_readonly(pn.state):
        pn.state.busy = True
    try:
        assert page.busy is False
    finally:
        with edit_readonly(pn.state):
            pn.state.busy = False
