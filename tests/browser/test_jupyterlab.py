"""JupyterLab with the workbench installed: the Launcher tile starts the dashboard behind the
Jupyter server's base URL and authentication (jupyter-server-proxy, the package's
`jupyter_serverproxy_servers` entry point; no config of our own); and the tutorial notebooks
run there on a fresh kernel with no network, every plot drawn.

The server's root is a project folder (a pyproject.toml) holding copies of the notebooks (the
committed ones are never saved over), so the notebooks, run from notebooks/, and the tile's
dashboard, started at the root, share one results folder: the root's results/.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import nbformat
import pytest
from browser_pages import RENDER_TIMEOUT_MS, SCREENSHOTS, Watched
from lab_notebooks import PLOTS, Offline, dismiss_news, drawn, run_all
from layout_boxes import outside
from served import REPO, Served, start_jupyter

pytestmark = pytest.mark.slow

TOKEN = "wb-test-token"
PROXY_TIMEOUT_S = 180.0
"""The first request under /workbench/ starts the dashboard (imports Panel and HoloViews)."""

NOTEBOOKS = REPO / "notebooks"
IN_LAB = {"01-quickstart": 3, "08-workbench-in-jupyter": 2}
"""The tutorial notebooks run in JupyterLab here, with the fewest plots each must draw: the
ones with interactive (Bokeh) plots. The others draw matplotlib figures only (PNG outputs, no
JavaScript), which nbval runs; tests/test_notebooks.py checks statically that a notebook sets
up its plotting before any interactive plot."""
RUN_TIMEOUT_S = 300.0
"""Run All of one notebook on this 2-core machine (about 40 s each here)."""
LATE_STYLESHEETS = {"08-workbench-in-jupyter"}
"""Notebooks whose page still asks the CDN for Panel stylesheets: the inline app (`%workbench`)
restyles parts later over the kernel's comm, and Panel sends their stylesheets' CDN URLs
before its preprocessing inlines them (the notebook side of holoviz/panel#7073). Offline those
fetches fail and only those parts' styling is missing: no script, every plot drawn."""
PANEL_CDN = "https://cdn.holoviz.org/panel/"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("lab")
    (home / "pyproject.toml").write_text("# a project root: its results/ is the results folder\n")
    (home / "notebooks").mkdir()
    for name in IN_LAB:
        shutil.copy(NOTEBOOKS / f"{name}.ipynb", home / "notebooks")
    (home / "workbench").mkdir()  # 08's cell config names ../workbench/examples/personas/...
    (home / "workbench" / "examples").symlink_to(REPO / "workbench" / "examples")
    served = start_jupyter(
        "lab", home, TOKEN, "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    )  # fmt: skip
    yield served
    served.stop()


def test_servers_info_lists_the_workbench_and_its_prefix_serves_the_app(lab: Served) -> None:
    headers = {"Authorization": f"token {TOKEN}"}
    info = httpx.get(f"{lab.url}/server-proxy/servers-info", headers=headers, timeout=10)
    assert info.status_code == 200, info.text
    (entry,) = [s for s in info.json()["server_processes"] if s["name"] == "workbench"]
    assert entry["launcher_entry"]["title"] == "Workbench"
    assert entry["launcher_entry"]["path_info"] == "workbench/"
    assert entry["new_browser_tab"] is False
    icon = httpx.get(lab.url + entry["launcher_entry"]["icon_url"], headers=headers, timeout=10)
    assert icon.status_code == 200 and b"<svg" in icon.content
    refused = httpx.get(f"{lab.url}/server-proxy/servers-info", timeout=10)
    assert refused.status_code in (302, 401, 403)  # behind the Jupyter server's auth
    page = httpx.get(f"{lab.url}/workbench/", headers=headers, timeout=PROXY_TIMEOUT_S)
    assert page.status_code == 200, page.text[:2000]
    assert "<title>Agent Simulation Workbench</title>" in page.text
    assert 'src="static/js/bokeh.min.js' in page.text  # relative: served under the prefix
    script = httpx.get(f"{lab.url}/workbench/static/js/bokeh.min.js", headers=headers, timeout=30)
    assert script.status_code == 200 and len(script.content) > 100_000
    assert httpx.get(f"{lab.url}/workbench/", timeout=10).status_code in (302, 401, 403)


def test_the_launcher_tile_opens_the_dashboard_in_a_lab_tab(watched: Watched, lab: Served) -> None:
    page = watched.page
    page.goto(f"{lab.url}/lab?token={TOKEN}", timeout=RENDER_TIMEOUT_MS)
    tile = page.locator(
        '.jp-LauncherCard[title="Workbench"], .jp-LauncherCard:has-text("Workbench")'
    )
    tile.first.wait_for(timeout=RENDER_TIMEOUT_MS)
    watched.shot("jupyterlab-launcher-tile")
    tile.first.click()
    frame = page.frame_locator("iframe").first
    frame.get_by_text("Counts per category against the requested shares").first.wait_for(
        timeout=RENDER_TIMEOUT_MS
    )
    # the dashboard in a lab tab at 1280 x 800: no control runs out of its card or is cut
    page.set_viewport_size({"width": 1280, "height": 800})
    cards = frame.locator(".wb-dimension-card")
    watched.until(lambda: cards.count() == 2, "the gender and education cards")
    page.wait_for_timeout(1500)  # the tab's layout after the resize
    for box in (*cards.all(), frame.locator(".wb-population-editor").first):
        seen, found = outside(box)
        assert seen >= 10 and found == [], found
    watched.shot("jupyterlab-dashboard-tab")
    ours = [(kind, text) for kind, text in watched.errors() if "workbench" in text.lower()]
    assert ours == [], watched.errors()


@pytest.mark.parametrize("name", sorted(IN_LAB))
def test_a_tutorial_notebook_draws_every_plot_in_jupyterlab_offline(
    watched: Watched, lab: Served, name: str
) -> None:
    offline = Offline()
    offline.install(watched.page)
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    code_cells = sum(cell.cell_type == "code" for cell in notebook.cells)
    path = f"notebooks/{name}.ipynb"
    seconds = run_all(watched, lab.url, TOKEN, path, code_cells, RUN_TIMEOUT_S)
    plots = watched.page.evaluate(PLOTS, -1)
    print(f"{name}: Run All took {seconds:.0f} s; plots {plots}")
    shown = [number for number, plot in enumerate(plots) if plot["shown"]]
    dismiss_news(watched.page)
    for number in shown:  # each plot as a person scrolls to it
        watched.page.evaluate(PLOTS, number)
        watched.page.wait_for_timeout(300)
        watched.page.screenshot(path=str(SCREENSHOTS / f"jupyterlab-offline-{name}-{number}.png"))
    # a plot in a tab of the inline app that is not open has no view yet: not drawn, not shown
    assert len(shown) >= IN_LAB[name], plots
    assert all(drawn(plots[number]) for number in shown), plots
    if name in LATE_STYLESHEETS:
        assert all(u.startswith(PANEL_CDN) and ".css" in u for u in offline.attempted), offline
    else:
        assert offline.attempted == [], offline.attempted
    written = Path(lab.log).parent / "results" / name  # the project's results folder
    assert list(written.iterdir()), f"{name} wrote no bundle into {written}"
