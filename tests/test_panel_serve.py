"""`panel serve notebooks/01-quickstart.ipynb` serves the quickstart notebook as a page.

A real `panel serve` process on a free 127.0.0.1 port, run in a temporary folder (the notebook
writes its bundle under results/ there); the page it answers is the notebook's servable
layout, built by running the notebook for each new session; its content reaches a browser over
the websocket, so the test pulls a session's document with bokeh's client and reads its text
(the dashboard issue's browser tests click through it)."""

from __future__ import annotations

import html
from pathlib import Path

import httpx
import pytest
from ports import free_port
from served import panel_serve_command, start_served

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
def test_panel_serves_the_quickstart_notebook(tmp_path: Path) -> None:
    port = free_port()
    command = panel_serve_command(NOTEBOOK, port)
    base = f"http://127.0.0.1:{port}"
    server = start_served(command, base, f"{base}/liveness", tmp_path)
    try:
        url = f"{base}/01-quickstart"
        page = httpx.get(url, timeout=PAGE_TIMEOUT_S)  # the page shell; its content comes
        assert page.status_code == 200, page.text[:2000]  # over the websocket, so pull it:
        texts = served_texts(url)
        assert any("quickstart: 30 agents, 2 rounds, model embedded" in t for t in texts), texts
        # each session (the page's, then the pulled one) ran the notebook into its own bundle
        bundles = [p for p in (tmp_path / "results" / "01-quickstart").iterdir() if p.is_dir()]
        assert len(bundles) == 2
        assert all((bundle / "figures" / "histogram.png").is_file() for bundle in bundles)
    finally:
        server.stop()
