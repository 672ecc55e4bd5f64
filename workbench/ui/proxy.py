"""The JupyterLab Launcher tile: a `jupyter_serverproxy_servers` entry point for the dashboard.

jupyter-server-proxy calls `setup_workbench()` when the Jupyter server starts and, on the first
request under `{base_url}workbench/`, runs `workbench dashboard` on a free port with that path
as its prefix, behind the Jupyter server's own authentication. The dashboard serves under its
prefix, so requests are passed on with their absolute path (`absolute_url: True`), as
holoviz/jupyter-panel-proxy does for `panel serve --prefix`. The tile opens in a JupyterLab tab
(`new_browser_tab: False`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

NAME = "workbench"
"""The server's name: its URL path under the Jupyter server's base URL and the entry point's."""

ICON = Path(__file__).with_name("workbench-icon.svg")
"""The Launcher tile's icon (package data)."""

START_TIMEOUT_S = 120.0
"""How long the proxy waits for the dashboard to answer: importing Panel and the workbench on a
busy machine takes tens of seconds."""


def dashboard_command() -> list[str]:
    """`workbench dashboard` on the proxy's port, served under the proxied prefix (`{port}` and
    `{base_url}` are filled in by jupyter-server-proxy; `{base_url}` ends in a slash).

    The page's websocket comes from the Jupyter server's origin, whose port the command cannot
    know, so any origin is accepted: the dashboard binds 127.0.0.1 on a port only the proxy
    uses, and the proxy stands behind the Jupyter server's authentication."""
    return [
        sys.executable, "-m", "workbench.cli", "dashboard",
        "--port", "{port}", "--prefix", "{base_url}" + NAME,
        "--allow-websocket-origin", "*",
    ]  # fmt: skip


def setup_workbench() -> dict[str, Any]:
    """The server process jupyter-server-proxy (>= 4.1) supervises for the "Workbench" tile."""
    return {
        "command": dashboard_command(),
        "absolute_url": True,
        "timeout": START_TIMEOUT_S,
        "new_browser_tab": False,
        "launcher_entry": {
            "enabled": True,
            "title": "Workbench",
            "icon_path": str(ICON),
            "category": "Notebook",
        },
    }
