"""Attacks on a served dashboard: its Bokeh session token, websockets opened with the Bokeh
subprotocol (refused or not), their first message (websocket-client)."""

from __future__ import annotations

import re

import pytest
import websocket


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
