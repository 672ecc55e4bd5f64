"""The JupyterLab Launcher tile: the jupyter-server-proxy entry of `ui/server/proxy.py`, read
as jupyter-server-proxy reads it (its own `ServerProcess` traits)."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from workbench.ui.server.proxy import ICON, setup_workbench


def test_the_proxy_entry_is_a_valid_server_process() -> None:
    from jupyter_server_proxy.config import ServerProcess

    entry = setup_workbench()
    process = ServerProcess(name="workbench", **entry)  # the traits jupyter-server-proxy checks
    unset = ["-u", "JUPYTERHUB_API_TOKEN", "-u", "JPY_API_TOKEN", "-u", "JUPYTER_TOKEN"]
    assert process.command[:7] == ["env", *unset]
    assert process.command[7:11] == [sys.executable, "-m", "workbench.cli", "dashboard"]
    assert process.command[11:] == ["--unix-socket", "{unix_socket}",
                                    "--prefix", "{base_url}workbench"]  # fmt: skip
    assert "*" not in process.command and "--port" not in process.command
    assert process.unix_socket is True
    assert process.absolute_url is True and process.new_browser_tab is False
    assert process.timeout >= 60
    assert process.launcher_entry.title == "Workbench"
    assert process.launcher_entry.path_info == "workbench/"
    assert Path(process.launcher_entry.icon_path) == ICON and ICON.is_file()
    assert ET.parse(ICON).getroot().tag == "{http://www.w3.org/2000/svg}svg"
