"""The JupyterLab tile attacked: a real `jupyter server` (jupyter-server-proxy, the package's
entry point) starts the dashboard on a private Unix socket. The page and its websocket work
through the proxy with Jupyter's token; the dashboard process listens on no TCP port, holds
none of Jupyter's tokens in its environment, never puts the Jupyter login into the page's
session, and refuses a foreign Origin even from a process that reaches its socket."""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
import websocket
from attacks import first_message, open_ws, session_token
from served import Served, start_jupyter

pytestmark = pytest.mark.slow

TOKEN = "wb-tile-test-token"
HUB_SECRET = "hub-secret-never-inherited"
PROXY_TIMEOUT_S = 180.0
"""The first request under /workbench/ starts the dashboard (imports Panel and HoloViews)."""


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("jupyter")
    env = {"JUPYTER_TOKEN": TOKEN, "JUPYTERHUB_API_TOKEN": HUB_SECRET, "JPY_API_TOKEN": HUB_SECRET}
    served = start_jupyter("server", home, TOKEN, env=env)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def tile_page(jupyter: Served) -> httpx.Response:
    """The dashboard's page through the proxy, asked for with Jupyter's token and a login
    cookie and XSRF header of the kind a browser sends to Jupyter."""
    headers = {
        "Authorization": f"token {TOKEN}",
        "Cookie": "_xsrf=xsrf-secret; jupyter-login=login-cookie-secret",
        "X-XSRFToken": "xsrf-secret",
    }
    page = httpx.get(f"{jupyter.url}/workbench/", headers=headers, timeout=PROXY_TIMEOUT_S)
    assert page.status_code == 200, page.text[:2000]
    return page


def dashboard_process(jupyter: Served) -> psutil.Process:
    """The `workbench dashboard` process the Jupyter server started for the tile."""
    (found,) = [
        child
        for child in psutil.Process(jupyter.process.pid).children(recursive=True)
        if "workbench.cli" in child.cmdline() and "dashboard" in child.cmdline()
    ]
    return found


def test_the_tile_serves_the_page_through_the_proxy_only(
    jupyter: Served, tile_page: httpx.Response
) -> None:
    assert "<title>Agent Simulation Workbench</title>" in tile_page.text
    headers = {"Authorization": f"token {TOKEN}"}
    script = httpx.get(f"{jupyter.url}/workbench/static/js/bokeh.min.js", headers=headers)
    assert script.status_code == 200 and len(script.content) > 100_000
    assert httpx.get(f"{jupyter.url}/workbench/", timeout=30).status_code in (302, 401, 403)


def test_no_tcp_port_and_no_jupyter_token_in_the_dashboard_process(
    jupyter: Served, tile_page: httpx.Response
) -> None:
    process = dashboard_process(jupyter)
    assert [c for c in process.net_connections(kind="inet") if c.status == "LISTEN"] == []
    environ = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
    names = {entry.split(b"=", 1)[0].decode() for entry in environ if entry}
    assert names.isdisjoint({"JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "JUPYTER_TOKEN"})
    assert HUB_SECRET.encode() not in b"\0".join(environ)
    socket_path = Path(process.cmdline()[process.cmdline().index("--unix-socket") + 1])
    assert stat.S_ISSOCK(socket_path.stat().st_mode)
    assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
    listening = [c for c in process.net_connections(kind="unix") if c.laddr == str(socket_path)]
    assert listening, process.net_connections(kind="unix")


def test_the_jupyter_login_never_reaches_the_page_session(tile_page: httpx.Response) -> None:
    from bokeh.util.token import get_token_payload

    payload = str(get_token_payload(session_token(tile_page.text)))
    for secret in (TOKEN, "login-cookie-secret", "xsrf-secret", "Authorization", "Cookie"):
        assert secret not in payload and secret not in tile_page.text


def test_the_websocket_works_through_the_proxy_from_jupyters_own_origin_only(
    jupyter: Served, tile_page: httpx.Response
) -> None:
    base = f"{jupyter.url}/workbench"
    good = session_token(tile_page.text)
    auth = f"Authorization: token {TOKEN}"
    assert "ACK" in first_message(open_ws(base, good, header=[auth]))
    # Jupyter lets a token-authenticated websocket through from any origin; the dashboard
    # behind it refuses the foreign Origin, so the proxied socket closes without a document
    try:
        foreign = open_ws(base, good, header=[auth], origin="http://attacker.example")
    except websocket.WebSocketBadStatusException as refused:
        assert refused.status_code == 403
    else:
        assert "ACK" not in first_message(foreign)


def test_the_socket_itself_refuses_a_foreign_origin(
    jupyter: Served, tile_page: httpx.Response
) -> None:
    process = dashboard_process(jupyter)
    socket_path = process.cmdline()[process.cmdline().index("--unix-socket") + 1]
    with httpx.Client(transport=httpx.HTTPTransport(uds=socket_path), timeout=60) as client:
        prefix = re.search(r"--prefix (\S+)", " ".join(process.cmdline()))
        assert prefix is not None
        url = f"http://localhost{prefix.group(1)}/"
        assert client.get(url).status_code == 200
        foreign = client.post(url, headers={"Origin": "http://attacker.example"})
        assert foreign.status_code == 403
