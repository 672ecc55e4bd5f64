"""`panel serve notebooks/01-quickstart.ipynb --port 5007` serves the quickstart notebook as a
page.

A real `panel serve` process on a free 127.0.0.1 port, run from the notebooks/ folder of a
temporary project (a pyproject.toml at its root); the page it answers is the notebook's
servable layout, built by running the notebook for each new session. A session plays no game
when the project's results folder (the one the dashboard lists) holds a bundle of the
notebook's config: the first page view plays it once, every later one shows it. Its content
reaches a browser over the websocket, so the test pulls a session's document with bokeh's
client and reads its text (tests/browser/test_served_notebook.py looks at it)."""

from __future__ import annotations

import html
import inspect
import re
from pathlib import Path

import httpx
import nbformat
import pytest
from ports import free_port
from served import panel_serve_command, start_served

from workbench.cli_servers import dashboard_command

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "01-quickstart.ipynb"
PAGE_TIMEOUT_S = 300.0  # the page runs the notebook: a small game on the embedded model


def served_texts(url: str) -> list[str]:
    """The text of every model in the document a new session of `url` gets, pulled over the
    websocket as a browser's would be (bokeh's client; Panel's models registered first)."""
    import panel.models  # noqa: F401  (the document holds Panel's own bokeh models)
    from bokeh.client import pull_session

    with pull_session(url=url) as session:
        models = session.document.models
        return [html.unescape(str(m.text)) for m in models if getattr(m, "text", None)]


@pytest.mark.slow
def test_panel_serves_the_quickstart_notebook_from_one_bundle(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")  # the project root: its results/ is shared
    (tmp_path / "notebooks").mkdir()
    port = free_port()
    command = panel_serve_command(NOTEBOOK, port)
    base = f"http://127.0.0.1:{port}"
    server = start_served(command, base, f"{base}/liveness", tmp_path / "notebooks")
    try:
        url = f"{base}/01-quickstart"
        page = httpx.get(url, timeout=PAGE_TIMEOUT_S)  # the page shell; its content comes
        assert page.status_code == 200, page.text[:2000]  # over the websocket, so pull it:
        texts = served_texts(url)
        assert any("quickstart: 30 agents, 2 rounds, model embedded" in t for t in texts), texts
        # the page's session played the game once; the pulled one showed that bundle
        folder = tmp_path / "results" / "01-quickstart"
        bundles = [p for p in folder.iterdir() if p.is_dir()]
        assert len(bundles) == 1, bundles
        assert (bundles[0] / "figures" / "histogram.png").is_file()
        assert any(bundles[0].name in t for t in texts), texts  # the plots' titles name it
        assert not (tmp_path / "notebooks" / "results").exists()
    finally:
        server.stop()


def test_the_quickstart_says_how_to_serve_it_beside_the_dashboard() -> None:
    """The notebook's instructions name a port of its own: the dashboard's default is 5006."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    said = [c.source for c in notebook.cells if "panel serve" in c.source]
    ports = {int(p) for text in said for p in re.findall(r"--port (\d+)", text)}
    dashboard = inspect.signature(dashboard_command).parameters["port"].default
    assert ports and dashboard not in ports, (ports, dashboard)
