"""JupyterLab with the workbench installed: the Launcher tile starts the dashboard behind the
Jupyter server's base URL and authentication (jupyter-server-proxy, the package's
`jupyter_serverproxy_servers` entry point; no config of our own)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from browser_pages import RENDER_TIMEOUT_MS, Watched
from served import Served, start_jupyter

pytestmark = pytest.mark.slow

TOKEN = "wb-test-token"
PROXY_TIMEOUT_S = 180.0
"""The first request under /workbench/ starts the dashboard (imports Panel and HoloViews)."""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("lab")
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
    watched.shot("jupyterlab-dashboard-tab")
    ours = [(kind, text) for kind, text in watched.errors() if "workbench" in text.lower()]
    assert ours == [], watched.errors()
