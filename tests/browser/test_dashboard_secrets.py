"""No secret leaves the dashboard because data asked for it: a real `workbench dashboard` with
a fake secret in its environment, a results folder holding a planted "running" bundle (and a
launch record) whose config sends that variable to a capture listener, the page open on every
tab for 30 s, then the Run tab's Check asked to send the same variable there. The listener
(`FakeServer`, an http.server thread that keeps every request) receives nothing; a dashboard
whose owner granted the variable for that host sends it on Check."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from attacks import plant_launch
from browser_pages import Watched, deep_text
from dashboard_pages import choose, fill, run_tab
from fake_openai import FakeServer
from ports import free_port
from served import Served, start_dashboard_process

from workbench.config import RunConfig
from workbench.results import BundleWriter

SECRET_VAR = "WB_TEST_DASHBOARD_SECRET"
SECRET = "sk-dashboard-secret-never-sent-42"
WATCH_S = 30.0
TABS = ("Population", "Run", "Results", "Cluster")


def plant_running_bundle(results: Path, config: RunConfig) -> BundleWriter:
    """A bundle that reads running (this test process holds its writer lock) with a launch
    record naming it, as an attacker who can write the results folder would leave one."""
    writer = BundleWriter(results, config, run_id="planted-run").__enter__()
    plant_launch(writer.path, os.getpid())
    return writer


def check_with_key(watched: Watched, dashboard: Served, url: str) -> str:
    """Ask the Run tab's Check about `url` with the secret's variable; its verdict."""
    launcher = run_tab(watched, dashboard)
    choose(launcher, "Model", "openai")
    fill(launcher, "Endpoint URL(s)", url)
    fill(launcher, "Model name", "fake")
    fill(launcher, "API key variable", SECRET_VAR)
    launcher.locator(".wb-launcher-check").get_by_role("button").click()
    message = launcher.locator(".wb-launcher-check-message")
    watched.until(lambda: deep_text(message).strip(), "the Check verdict")
    return deep_text(message)


def start(tmp_path: Path, results: Path, *options: str) -> Served:
    return start_dashboard_process(
        results, tmp_path, free_port(), *options, env={SECRET_VAR: SECRET}
    )


def test_no_secret_leaves_with_every_tab_open_and_check_refuses(
    watched: Watched, tmp_path: Path, make_config: Callable[..., RunConfig]
) -> None:
    results = tmp_path / "results"
    with FakeServer(model="fake") as server:
        model = {"kind": "openai", "base_urls": [server.url], "name": "fake"}
        config = make_config(
            policy={"kind": "llm"}, model=model | {"api_key_env": SECRET_VAR}, n_agents=4
        )
        writer = plant_running_bundle(results, config)
        dashboard = start(tmp_path, results)
        try:
            watched.open(dashboard.url)
            deadline = time.monotonic() + WATCH_S
            while time.monotonic() < deadline:
                for tab in TABS:
                    watched.page.get_by_role("tab", name=tab).click()
                    watched.page.wait_for_timeout(1500)
            verdict = check_with_key(watched, dashboard, server.url)
            watched.shot("check-refuses-an-ungranted-key")
        finally:
            dashboard.stop()
            writer.__exit__(None, None, None)
        assert "--allow-key-env" in verdict and SECRET_VAR in verdict, verdict
        assert (server.gets, server.posts, server.probes) == ([], [], [])
        assert SECRET not in dashboard.output()
    watched.assert_no_errors()


@pytest.mark.parametrize("granted", [True, False])
def test_a_granted_key_goes_only_to_its_host(
    watched: Watched, tmp_path: Path, granted: bool
) -> None:
    with FakeServer(model="fake") as server:
        port = server.url.split(":")[2].split("/")[0]
        host = f"127.0.0.1:{port}" if granted else "127.0.0.1:1"
        dashboard = start(tmp_path, tmp_path / "results", "--allow-key-env", f"{SECRET_VAR}={host}")
        try:
            verdict = check_with_key(watched, dashboard, server.url)
        finally:
            dashboard.stop()
        sent = [r["headers"].get("Authorization") for r in server.gets + server.posts]
    if granted:
        assert f"Bearer {SECRET}" in sent, (verdict, sent)
    else:
        assert "is not a host the key" in verdict and sent == [], verdict
    assert SECRET not in verdict
