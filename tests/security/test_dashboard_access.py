"""A real `workbench dashboard` attacked over HTTP and websockets, as a local user or a web page
would: nothing without the token (page, Bokeh's and Panel's static files, the panel-cdn route,
the websocket), forged Bokeh sessions refused, a foreign Origin and a rebinding Host refused,
and `--no-auth` refused beyond loopback."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from attacks import first_message, open_ws, refused_status, session_token
from ports import free_port
from served import Served, start_dashboard_process

from workbench.ui.server.offline import CDN_ROUTE

pytestmark = pytest.mark.slow

PANEL_CDN_CSS = "dist/css/loading.css"


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("attacked")
    served = start_dashboard_process(home / "results", home, free_port())
    yield served
    served.stop()


def base_and_token(dashboard: Served) -> tuple[str, str]:
    parts = urlsplit(dashboard.url)
    token = parts.query.removeprefix("token=")
    assert re.fullmatch(r"[A-Za-z0-9_-]{40,}", token), dashboard.url
    return f"{parts.scheme}://{parts.netloc}", token


def static_paths() -> list[str]:
    from panel.io.resources import JS_VERSION

    return ["/static/js/bokeh.min.js", f"/{CDN_ROUTE}/{JS_VERSION}/{PANEL_CDN_CSS}"]


def test_nothing_is_served_without_the_token(dashboard: Served) -> None:
    base, token = base_and_token(dashboard)
    for path in ["/", "/liveness", "/favicon.ico", *static_paths()]:
        refused = httpx.get(base + path, timeout=30)
        assert refused.status_code == 401, (path, refused.status_code)
        assert "token" in refused.text and token not in refused.text
        wrong = httpx.get(base + path, headers={"Authorization": "token nope"}, timeout=30)
        assert wrong.status_code == 401, path
    for path in static_paths():  # the same files with the token: they exist
        answer = httpx.get(base + path, headers={"Authorization": f"token {token}"}, timeout=30)
        assert answer.status_code == 200 and len(answer.content) > 100, path


def test_the_token_earns_a_strict_httponly_cookie_and_the_page(dashboard: Served) -> None:
    base, token = base_and_token(dashboard)
    with httpx.Client(timeout=60) as client:
        first = client.get(f"{base}/?token={token}")
        assert first.status_code == 302 and first.headers["location"] == "/"  # token dropped
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
        page = client.get(f"{base}/")  # the cookie alone
        assert page.status_code == 200 and "<title>Agent Simulation Workbench</title>" in page.text
        assert token not in page.text
        assert client.get(base + static_paths()[1]).status_code == 200
    forged_cookie = {"Cookie": cookie.split(";")[0].rsplit("|", 1)[0] + "|" + "0" * 64}
    assert httpx.get(f"{base}/", headers=forged_cookie, timeout=30).status_code == 401


def test_the_session_token_holds_no_credential(dashboard: Served) -> None:
    from bokeh.util.token import get_token_payload

    base, token = base_and_token(dashboard)
    headers = {"Authorization": f"token {token}", "Cookie": "jupyter-login=secret-cookie"}
    page = httpx.get(f"{base}/", headers=headers, timeout=60)
    payload = str(get_token_payload(session_token(page.text)))
    assert token not in payload and "secret-cookie" not in payload
    assert "Authorization" not in payload and "Cookie" not in payload


def test_the_websocket_needs_the_token_a_signed_session_and_its_own_origin(
    dashboard: Served,
) -> None:
    from bokeh.util.token import generate_jwt_token, generate_session_id

    base, token = base_and_token(dashboard)
    auth = f"Authorization: token {token}"
    page = httpx.get(f"{base}/", headers={"Authorization": f"token {token}"}, timeout=60)
    good = session_token(page.text)

    ws = open_ws(base, good, header=[auth])  # websocket-client sends the page's own Origin
    assert ws.getstatus() == 101 and "ACK" in first_message(ws)

    assert refused_status(base, good) == 401
    assert refused_status(base, good, header=[auth], origin="http://attacker.example") == 403

    for forged in (
        generate_jwt_token(generate_session_id(signed=False), signed=False),
        generate_jwt_token(
            generate_session_id(secret_key=b"x" * 32, signed=True),
            secret_key=b"x" * 32,
            signed=True,
        ),
    ):
        assert "ACK" not in first_message(open_ws(base, forged, header=[auth]))

    unsigned_id = generate_session_id(signed=False)
    page = httpx.get(
        f"{base}/?bokeh-session-id={unsigned_id}",
        headers={"Authorization": f"token {token}"},
        timeout=60,
    )
    assert page.status_code == 403 and unsigned_id not in page.text


def test_a_rebinding_host_and_a_foreign_origin_are_refused(dashboard: Served) -> None:
    base, token = base_and_token(dashboard)
    port = urlsplit(base).port
    auth = {"Authorization": f"token {token}"}
    rebinding = {**auth, "Host": f"attacker.example:{port}"}
    assert httpx.get(f"{base}/", headers=rebinding, timeout=30).status_code == 403
    rebound = refused_status(
        base,
        "x",
        header=[f"Authorization: token {token}"],
        host=f"attacker.example:{port}",
        origin=f"http://attacker.example:{port}",
    )
    assert rebound == 403
    posted = httpx.post(f"{base}/", headers={**auth, "Origin": "http://attacker.example"})
    assert posted.status_code == 403
    assert httpx.get(f"{base}/", headers={**auth, "Host": f"localhost:{port}"}).status_code == 200


def test_the_owner_can_give_the_token_in_the_environment(tmp_path: Path) -> None:
    token = "owner-chosen-token-" + "0123456789" * 3
    served = start_dashboard_process(
        tmp_path / "results", tmp_path, free_port(), env={"WORKBENCH_TOKEN": token}
    )
    try:
        base, printed = base_and_token(served)
        assert printed == token
        assert httpx.get(f"{base}/", timeout=60).status_code == 401
        keyed = httpx.get(f"{base}/", headers={"Authorization": f"token {token}"}, timeout=60)
        assert keyed.status_code == 200
    finally:
        served.stop()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--address", "0.0.0.0", "--no-auth"], "--no-auth"),
        (["--address", "10.1.2.3", "--no-auth"], "--no-auth"),
        (["--token", "short"], "--token"),
        (["--unix-socket", "/tmp/x.sock", "--no-auth"], "--unix-socket"),
        (["--allow-key-env", "OPENAI_API_KEY"], "--allow-key-env"),
        (["--allow-key-env", "KEY=https://host/v1"], "--allow-key-env"),
        (["--workspace", "/usr/share"], "--results"),
    ],
)
def test_unsafe_options_are_refused_in_one_line(
    tmp_path: Path, options: list[str], named: str
) -> None:
    done = run_cli("dashboard", "--results", str(tmp_path / "r"), *options)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert named in line and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()
