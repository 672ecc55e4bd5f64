"""The JupyterLab Launcher tile: a `jupyter_serverproxy_servers` entry point for the dashboard.

jupyter-server-proxy calls `setup_workbench()` when the Jupyter server starts and, on the first
request under `{base_url}workbench/`, runs `workbench dashboard` on a private Unix socket
(`unix_socket: True`: a fresh owner-only folder, the socket itself mode 0600) with that path as
its prefix. No TCP port exists, so the only way in is through the Jupyter server, whose login
is the authentication; the dashboard still checks Origin, strips the Jupyter login cookie and
other credentials from every request, and is started without Jupyter's tokens in its
environment (`env -u`, so not even the environment the kernel shows for it holds them). The
dashboard serves under its prefix, so requests are passed on with their absolute path
(`absolute_url: True`), as holoviz/jupyter-panel-proxy does for `panel serve --prefix`. The
tile opens in a JupyterLab tab (`new_browser_tab: False`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from workbench.ui.server.access import JUPYTER_TOKENS

NAME = "workbench"
"""The server's name: its URL path under the Jupyter server's base URL and the entry point's."""

ICON = Path(__file__).with_name("workbench-icon.svg")
"""The Launcher tile's icon (package data)."""

START_TIMEOUT_S = 120.0
"""How long the proxy waits for the dashboard to answer: importing Panel and the workbench on a
busy machine takes tens of seconds."""


def dashboard_command() -> list[str]:
    """`workbench dashboard` on the proxy's Unix socket, served under the proxied prefix
    (`{unix_socket}` and `{base_url}` are filled in by jupyter-server-proxy; `{base_url}` ends
    in a slash), started by `env` without Jupyter's tokens.

    The page's websocket comes from the Jupyter server's origin, whose name the command cannot
    know: the dashboard accepts an Origin only when it is the request's own Host (the Jupyter
    server's, which the Jupyter server has checked), never a wildcard."""
    unset = [arg for name in JUPYTER_TOKENS for arg in ("-u", name)]
    return [
        "env",
        *unset,
        sys.executable,
        "-m",
        "workbench.cli",
        "dashboard",
        "--unix-socket",
        "{unix_socket}",
        "--prefix",
        "{base_url}" + NAME,
    ]


def setup_workbench() -> dict[str, Any]:
    """The server process jupyter-server-proxy (>= 4.1) supervises for the "Workbench" tile."""
    return {
        "command": dashboard_command(),
        "unix_socket": True,
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
