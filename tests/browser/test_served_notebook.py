"""`panel serve notebooks/01-quickstart.ipynb` in a browser with no network: the notebook's
servable layout renders, its plot drawn, with no console errors and no request beyond
127.0.0.1 (the first session plays a small embedded game; later ones show its bundle)."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_pages import RENDER_TIMEOUT_MS, Watched
from lab_notebooks import Offline
from ports import free_port
from served import REPO, panel_serve_command, start_served

pytestmark = pytest.mark.slow

NOTEBOOK = REPO / "notebooks" / "01-quickstart.ipynb"


def test_the_served_quickstart_notebook_renders(watched: Watched, tmp_path: Path) -> None:
    port = free_port()
    command = panel_serve_command(NOTEBOOK, port)
    base = f"http://127.0.0.1:{port}"
    server = start_served(command, base, f"{base}/liveness", tmp_path)
    offline = Offline()
    offline.install(watched.page)
    try:
        watched.open(f"{base}/01-quickstart")
        watched.wait_text("quickstart: 30 agents, 2 rounds, model embedded", 2 * RENDER_TIMEOUT_MS)
        watched.page.locator("canvas").first.wait_for(timeout=RENDER_TIMEOUT_MS)  # its plot
        watched.shot("served-quickstart-notebook")
        watched.assert_no_errors()
        assert offline.attempted == [], offline.attempted
    finally:
        server.stop()
