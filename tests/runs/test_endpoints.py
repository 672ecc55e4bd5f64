"""The monitor's endpoint health check never carries a secret and asks only about this folder's
own launches.

A capture listener (`FakeServer`: an http.server thread that keeps every request's headers)
stands for a server an attacker named. A bundle planted to read "running", whose config names
`model.api_key_env` of a variable set in this environment and the listener as its base URL,
makes the monitor (`endpoints()` and a `ClusterMonitor` refresh) send nothing at all. A run this
folder's launcher started is checked with a GET that carries no Authorization header.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from attacks import plant_launch
from fake_openai import FakeServer, completion

from workbench.config import RunConfig
from workbench.results import BundleWriter
from workbench.runs.cancelling import cancel
from workbench.runs.endpoints import ENDPOINT_COLUMNS, endpoints
from workbench.runs.launch_states import launch_state
from workbench.runs.launcher import launch

SECRET_VAR = "WB_TEST_ENDPOINT_SECRET"
SECRET = "sk-must-never-leave-0123456789"


def _openai(config: Callable[..., RunConfig], url: str, **extra) -> RunConfig:
    model = {"kind": "openai", "base_urls": [url], "name": "fake", "api_key_env": SECRET_VAR}
    return config(policy={"kind": "llm"}, model=model | extra, n_agents=4, rounds=2)


def _sent_secret(server: FakeServer) -> list[dict]:
    seen = [*server.gets, *server.posts, *getattr(server, "probes", [])]
    return [r for r in seen if SECRET in json.dumps(r.get("headers", {}))]


def test_a_planted_running_bundle_gets_no_request_at_all(
    make_config: Callable[..., RunConfig], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.ui.cluster_monitor import ClusterMonitor

    monkeypatch.setenv(SECRET_VAR, SECRET)
    results = tmp_path / "results"
    with FakeServer(model="fake") as server:
        config = _openai(make_config, server.url)
        with BundleWriter(results, config, run_id="planted-run") as writer:
            # reads "running" (its writer, this process, lives) and even has a launch record
            plant_launch(writer.path, os.getpid())

            frame = endpoints(results, timeout_s=2.0)
            assert list(frame.columns) == list(ENDPOINT_COLUMNS) and frame.empty
            monitor = ClusterMonitor(results_dir=str(results))
            assert monitor.read()["endpoints"].empty
            time.sleep(0.5)  # anything sent would have arrived by now
        assert server.gets == [] and server.posts == []
        assert _sent_secret(server) == []


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and /proc")
def test_a_launched_runs_endpoint_is_checked_without_a_key(
    make_config: Callable[..., RunConfig], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_VAR, SECRET)
    results = tmp_path / "results"

    def slow(body: dict, n: int):
        return 200, completion("42"), 2.0  # keeps the run running while the monitor looks

    with FakeServer(respond=slow, model="fake") as server:
        config = _openai(make_config, server.url, timeout_s=30)
        record = launch(config, results, check=False)
        try:
            deadline = time.monotonic() + 90
            while not server.chat_posts:  # its start-up checks done, it plays
                assert launch_state(record).status == "running", launch_state(record).error
                assert time.monotonic() < deadline, "the run never asked its model"
                time.sleep(0.1)
            before = len(server.gets)
            frame = endpoints(results, timeout_s=2.0)
            checks = server.gets[before:]
        finally:
            if launch_state(record).status == "running":
                cancel(record)
    assert frame["run_id"].tolist() == [record.launch_id]
    assert frame["base_url"].tolist() == [server.url] and frame["health"].tolist() == ["ok"]
    models = [c for c in checks if c["path"].endswith("/models")]
    assert models, checks
    for check in models:
        assert "authorization" not in {k.lower() for k in check["headers"]}, check
        assert SECRET not in json.dumps(check["headers"])
