"""A local Ray cluster the workbench starts keeps Ray's token authentication, with a token
held in memory: no token file is written, and a client with another token cannot join."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray]

STARTS_A_LOCAL_CLUSTER = """
import os, subprocess, sys
from workbench.runtime.ray_backend import connect
connect(None)
import ray
from ray._raylet import AuthenticationMode, get_authentication_mode
print("mode", get_authentication_mode() == AuthenticationMode.TOKEN)
address = ray.get_runtime_context().gcs_address
env = {**os.environ, "RAY_AUTH_TOKEN": "0" * 64}
intruder = subprocess.run(
    [sys.executable, "-c", f"import ray; ray.init(address={address!r}); print('joined')"],
    env=env, capture_output=True, text=True, timeout=120,
)
print("intruder", intruder.returncode, "joined" in intruder.stdout)
ray.shutdown()
"""


def test_the_local_cluster_asks_for_a_token_that_no_file_holds(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env.update(HOME=str(tmp_path), RAY_USAGE_STATS_ENABLED="0")
    done = subprocess.run(
        [sys.executable, "-c", STARTS_A_LOCAL_CLUSTER],
        env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "mode True" in done.stdout, done.stdout
    (intruder,) = [line for line in done.stdout.splitlines() if line.startswith("intruder")]
    assert intruder.split()[1] != "0" and intruder.split()[2] == "False", intruder
    assert not (tmp_path / ".ray" / "auth_token").exists()
    assert list(tmp_path.rglob("auth_token*")) == []
