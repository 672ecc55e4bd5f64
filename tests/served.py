"""A server process a test starts (panel serve, workbench dashboard, jupyter server): started in
its own session on a free 127.0.0.1 port, ready when a URL answers, stopped by its own PID."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
from ports import free_port

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120.0
"""Importing Panel, HoloViews and the workbench takes tens of seconds on a busy machine."""


@dataclass
class Served:
    """A started server: its process, base URL and log file."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path

    def output(self) -> str:
        """What the server printed so far."""
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM to the server's process group (what it started, nothing else), then wait."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)


def start_served(
    command: Sequence[str],
    url: str,
    ready: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> Served:
    """Start `command` in `cwd` (the repo on PYTHONPATH) and wait until GET `ready` answers."""
    log = cwd / f"server-{time.monotonic_ns()}.log"
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(command), cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=environment,
            start_new_session=True,
        )  # fmt: skip
    served = Served(process, url, log)
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise AssertionError(f"{command[:4]} exited {process.returncode}:\n{served.output()}")
        try:
            httpx.get(ready, timeout=2.0)
            return served
        except httpx.TransportError:
            if time.monotonic() > deadline:
                served.stop()
                raise AssertionError(f"{ready} did not answer in {timeout_s} s") from None
            time.sleep(0.5)


def printed_url(served: Served, timeout_s: float = 30.0) -> str:
    """The URL a started `workbench dashboard` printed (with its token: `...?token=...`)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in served.output().splitlines():
            if line.startswith("workbench dashboard: http"):
                return line.split()[2]
        time.sleep(0.2)
    raise AssertionError(f"the dashboard printed no URL:\n{served.output()}")


def start_dashboard_process(
    results: Path,
    home: Path,
    port: int,
    *options: str,
    env: dict[str, str] | None = None,
    fresh: bool = True,
) -> Served:
    """`workbench dashboard` over `results` on 127.0.0.1:PORT (more `env` if given); its `url`
    is the URL it printed, with the token (the first visit to it sets the page's cookie).
    `fresh`: every page starts from the defaults (`--fresh`), so the tests sharing one
    dashboard do not start from each other's edits; the kept state has tests of its own."""
    command = workbench_command(
        "dashboard", "--results", str(results), "--port", str(port), *options,
        *(["--fresh"] if fresh else []),
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    served = start_served(command, f"{base}/", f"{base}/liveness", home, env)
    served.url = printed_url(served)
    return served


def start_jupyter(
    app: str, home: Path, token: str, *options: str, env: dict[str, str] | None = None
) -> Served:
    """`jupyter APP` (server or lab) on a free 127.0.0.1 port, rooted in `home` with its own
    config and data folders, asking for `token`; waits until its API answers (more `env` if
    given)."""
    port = free_port()
    command = [sys.executable, "-m", "jupyter", app, "--no-browser", "--allow-root",
               f"--port={port}", "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
               *options]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    folders = {"JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data")}
    return start_served(
        command, base, f"{base}/api/status?token={token}", home, {**folders, **(env or {})}
    )


def workbench_command(*args: str) -> list[str]:
    """The workbench CLI run by this interpreter."""
    return [sys.executable, "-m", "workbench.cli", *args]


def panel_serve_command(path: Path, port: int) -> list[str]:
    """`panel serve PATH` on 127.0.0.1:PORT with its liveness endpoint, by this interpreter."""
    return [sys.executable, "-m", "panel", "serve", str(path), "--port", str(port),
            "--address", "127.0.0.1", "--liveness",
            "--allow-websocket-origin", f"127.0.0.1:{port}"]  # fmt: skip
