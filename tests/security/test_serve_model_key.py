"""`workbench serve-model` with an API key: a real server (the shipped SmolLM2) answers only
requests that carry `Authorization: Bearer KEY`, sends no CORS header to any page, and refuses
to start beyond loopback without a key."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from ports import free_port

pytestmark = pytest.mark.slow

KEY = "serve-model-test-key-0123456789"


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("serve-model") / "server.log"
    port = free_port()
    command = [sys.executable, "-m", "workbench.cli", "serve-model", "--port", str(port),
               "--n-threads", "1"]  # fmt: skip
    env = {**os.environ, "WORKBENCH_SERVE_API_KEY": KEY}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()
            try:
                httpx.get(f"{url}/v1/models", timeout=1.0)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert KEY not in log.read_text()


def test_requests_without_the_key_get_401(keyed_server: str) -> None:
    for path in ("/v1/models", "/openapi.json", "/docs"):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            answer = httpx.get(keyed_server + path, headers=headers, timeout=10)
            assert answer.status_code == 401, (path, headers)
            assert KEY not in answer.text
    chat = httpx.post(
        f"{keyed_server}/v1/chat/completions",
        json={"model": "smollm2-135m", "messages": [{"role": "user", "content": "hi"}]},
        timeout=10,
    )
    assert chat.status_code == 401


def test_the_key_opens_it_and_no_page_gets_a_cors_header(keyed_server: str) -> None:
    keyed = {"Authorization": f"Bearer {KEY}"}
    models = httpx.get(f"{keyed_server}/v1/models", headers=keyed, timeout=30)
    assert models.status_code == 200 and models.json()["data"][0]["id"] == "smollm2-135m"
    page = {"Origin": "http://attacker.example"}
    answer = httpx.get(f"{keyed_server}/v1/models", headers={**keyed, **page}, timeout=30)
    assert "access-control-allow-origin" not in answer.headers
    preflight = httpx.options(
        f"{keyed_server}/v1/chat/completions",
        headers={**page, "Access-Control-Request-Method": "POST"},
        timeout=30,
    )
    assert "access-control-allow-origin" not in preflight.headers


def test_beyond_loopback_without_a_key_it_refuses_to_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_SERVE_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "serve-model", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--host 0.0.0.0" in line and "WORKBENCH_SERVE_API_KEY" in line
