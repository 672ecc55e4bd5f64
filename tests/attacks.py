"""Attacks on a served dashboard: its Bokeh session token, websockets opened with the Bokeh
subprotocol (refused or not), their first message (websocket-client); a launch record planted
in a results folder."""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path

import pytest
import websocket


def plant_launch(bundle: Path, pid: int, rounds: int = 2) -> Path:
    """A `launch.json` (and the bundle's config beside it) under `bundle`'s results folder, as
    someone who can write that folder would leave one: it names `pid` on this host; returns the
    launch folder."""
    folder = bundle.parent / ".launches" / bundle.name
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text((bundle / "config.yaml").read_text())
    record = {
        "launch_id": bundle.name,
        "pid": pid,
        "host": socket.gethostname(),
        "started_at": "2026-01-01T00:00:00+00:00",
        "config": str(folder / "config.yaml"),
        "log": str(folder / "run.log"),
        "command": [sys.executable, "-m", "workbench.cli", "run"],
        "name": bundle.name,
        "rounds": rounds,
    }
    (folder / "launch.json").write_text(json.dumps(record), encoding="utf-8")
    return folder


def session_token(page: str) -> str:
    """The Bokeh session token the served page carries."""
    (token,) = set(re.findall(r'"token":\s*"([^"]+)"', page))
    return token


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws"


def open_ws(base: str, bokeh_token: str, **options: object) -> websocket.WebSocket:
    """A websocket to the dashboard with the Bokeh subprotocol and `bokeh_token`."""
    ws = websocket.WebSocket()
    ws.settimeout(20)
    try:
        ws.connect(ws_url(base), subprotocols=["bokeh", bokeh_token], **options)
    except BaseException:
        shut(ws)
        raise
    return ws


def refused_status(base: str, bokeh_token: str, **options: object) -> int:
    """The status a refused websocket handshake got (fails when the handshake succeeds)."""
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        shut(open_ws(base, bokeh_token, **options))
    return refused.value.status_code


def first_message(ws: websocket.WebSocket) -> str:
    """What the server sends first ('' when it closes the connection instead), then closed."""
    try:
        opcode, data = ws.recv_data(control_frame=True)
        return "" if opcode == websocket.ABNF.OPCODE_CLOSE else data.decode(errors="replace")
    except websocket.WebSocketConnectionClosedException:
        return ""
    finally:
        shut(ws)


def shut(ws: websocket.WebSocket) -> None:
    """Close `ws` and its socket, whatever state the server left it in."""
    try:
        ws.close(timeout=2)
    except (websocket.WebSocketException, OSError):
        pass
    finally:
        ws.shutdown()
