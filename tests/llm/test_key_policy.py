"""Which API key goes where: the CLI user's own config sends its key; under a dashboard's key
policy only a granted variable goes, and only to its hosts. Tested against a real HTTP server
on 127.0.0.1 that records every request's headers, and a real `workbench run` subprocess."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cli_helpers import assert_user_error
from fake_openai import FakeServer

from workbench.config import ModelSpec
from workbench.errors import ConfigError
from workbench.llm import make_model
from workbench.llm.key_policy import POLICY_ENV, KeyPolicy, endpoint_host

SECRET = "sk-test-not-for-strangers"
VARIABLE = "WB_TEST_MODEL_KEY"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VARIABLE, SECRET)
    monkeypatch.delenv(POLICY_ENV, raising=False)


def spec(url: str, variable: str = VARIABLE) -> ModelSpec:
    return ModelSpec(kind="openai", base_urls=[url], name="fake", api_key_env=variable)


def seen_keys(server: FakeServer) -> list[str]:
    """Every Authorization header the server recorded (the start-up check's GETs and POSTs)."""
    headers = [r["headers"] for r in server.gets + server.posts]
    return [h["Authorization"] for h in headers if h.get("Authorization")]


def test_parse_and_env_round_trip() -> None:
    policy = KeyPolicy.parse(["A_KEY=Host-1:8000,host2", "A_KEY=host3", "B=10.0.0.5"])
    environ: dict[str, str] = {}
    policy.install(environ)
    assert environ == {POLICY_ENV: policy.to_env()}
    assert policy.grants == {
        "A_KEY": frozenset({"host-1:8000", "host2", "host3"}),
        "B": frozenset({"10.0.0.5"}),
    }
    assert KeyPolicy.from_env({POLICY_ENV: policy.to_env()}) == policy
    assert KeyPolicy.from_env({}) is None
    assert KeyPolicy.from_env({POLICY_ENV: "{damaged"}) == KeyPolicy()
    for bad in ("NOEQUALS", "1BAD=host", "A=", "A=http://host/v1", "A=host/path"):
        with pytest.raises(ConfigError, match="--allow-key-env"):
            KeyPolicy.parse([bad])


def test_endpoint_host_defaults_ports() -> None:
    assert endpoint_host("http://Example.org/v1") == ("example.org", "example.org:80")
    assert endpoint_host("https://example.org/v1") == ("example.org", "example.org:443")
    assert endpoint_host("http://127.0.0.1:8000/v1") == ("127.0.0.1", "127.0.0.1:8000")
    assert endpoint_host("http://[::1]:9/v1") == ("[::1]", "[::1]:9")


def test_cli_users_own_config_sends_its_key(secret_env: None) -> None:
    """No dashboard policy: the config is the user's own, its key goes to its endpoint."""
    with FakeServer() as server:
        model = make_model(spec(server.url))
        asyncio.run(model.check())
    assert f"Bearer {SECRET}" in seen_keys(server)


@pytest.mark.parametrize(
    ("grants", "needle"),
    [
        ([], "is not a key this dashboard may send (granted: none)"),
        (["OTHER_KEY=127.0.0.1"], "is not a key this dashboard may send (granted: OTHER_KEY)"),
        ([f"{VARIABLE}=127.0.0.1:1"], "is not a host the key"),
        ([f"{VARIABLE}=localhost"], "is not a host the key"),
    ],
)
def test_policy_refuses_before_anything_is_sent(
    secret_env: None, monkeypatch: pytest.MonkeyPatch, grants: list[str], needle: str
) -> None:
    KeyPolicy.parse(grants).install(environ := {})
    monkeypatch.setenv(POLICY_ENV, environ[POLICY_ENV])  # undone after the test
    with FakeServer() as server:
        with pytest.raises(ConfigError, match="--allow-key-env") as info:
            make_model(spec(server.url))
        assert needle in str(info.value)
        assert SECRET not in str(info.value)
    assert (server.gets, server.posts, server.probes) == ([], [], [])


@pytest.mark.parametrize("grant", ["127.0.0.1", "127.0.0.1:{port}"])
def test_policy_sends_a_granted_key_to_its_host(
    secret_env: None, monkeypatch: pytest.MonkeyPatch, grant: str
) -> None:
    with FakeServer() as server:
        port = endpoint_host(server.url)[1].rsplit(":", 1)[1]
        policy = KeyPolicy.parse([f"{VARIABLE}={grant.format(port=port)}"])
        monkeypatch.setenv(POLICY_ENV, policy.to_env())
        asyncio.run(make_model(spec(server.url)).check())
    assert f"Bearer {SECRET}" in seen_keys(server)


def test_launched_run_under_a_policy_sends_nothing(tmp_path: Path) -> None:
    """A `workbench run` started with a dashboard's policy in its environment (as the
    dashboard launches runs) refuses a config naming a variable not granted: one line, exit 2,
    no bundle, and the endpoint never hears of it."""
    with FakeServer() as server:
        config = {
            "name": "planted",
            "n_agents": 4,
            "population": str(Path("personas/paper-education.yaml").resolve()),
            "game": {"rounds": 1},
            "model": {**spec(server.url).model_dump(exclude_defaults=True)},
            "output": {"dir": str(tmp_path / "results")},
        }
        path = tmp_path / "planted.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {**os.environ, VARIABLE: SECRET, POLICY_ENV: KeyPolicy().to_env()}
        result = subprocess.run(
            [sys.executable, "-m", "workbench.cli", "run", str(path), "--no-progress"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
    assert_user_error(result, "model.api_key_env", VARIABLE, "--allow-key-env")
    assert SECRET not in result.stderr + result.stdout
    assert (server.gets, server.posts, server.probes) == ([], [], [])
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
