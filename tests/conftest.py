"""Shared fixtures: the paper's education population, small run configs, the embedded model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from run_configs import run_config
from tiers import mark_tiers
from vllm_server import VLLMServer, shared_server

from workbench.config import PopulationSpec, RunConfig, load_population_spec
from workbench.population import sample_population

REPO = Path(__file__).resolve().parents[1]
EDUCATION_YAML = REPO / "personas" / "paper-education.yaml"


@pytest.fixture(scope="session")
def education_spec() -> PopulationSpec:
    """The paper's education population (five education levels, two genders)."""
    return load_population_spec(EDUCATION_YAML)


@pytest.fixture
def education_personas(education_spec: PopulationSpec) -> Callable[[int, int], pd.DataFrame]:
    """`education_personas(n, seed)`: n sampled personas of the education population."""

    def sample(n: int = 12, seed: int = 0) -> pd.DataFrame:
        return sample_population(education_spec, n, seed)

    return sample


@pytest.fixture
def make_config(education_spec: PopulationSpec) -> Callable[..., RunConfig]:
    """`make_config(policy=..., n_agents=..., rounds=..., ...)`: a small validated RunConfig.

    `policy` and `model` are dicts (e.g. {"kind": "level_k"}); `game` entries update the game
    section; `agents_per_shard` sets the backend's shard size. The education population's
    `run_config` (tests/run_configs.py) with this fixture's defaults.
    """

    def build(
        *,
        policy: dict[str, Any] | None = None,
        n_agents: int = 10,
        rounds: int = 2,
        seed: int = 7,
        agents_per_shard: int = 4,
        game: dict[str, Any] | None = None,
        model: dict[str, Any] | None = None,
        name: str = "test",
    ) -> RunConfig:
        sections = {} if model is None else {"model": model}
        return run_config(
            education_spec,
            name=name,
            seed=seed,
            n_agents=n_agents,
            rounds=rounds,
            game=game,
            agents_per_shard=agents_per_shard,
            policy=policy or {"kind": "random"},
            **sections,
        )

    return build


@pytest.fixture(scope="session")
def embedded_model():
    """The embedded SmolLM2-135M on llama.cpp, loaded once for the whole session.

    One thread: llama.cpp's worker threads spin on each other, so on a shared, busy machine
    two or more threads can be many times slower than one; the answers are the same.
    """
    from workbench.llm.llamacpp import LlamaCppModel

    return LlamaCppModel(n_threads=1).load()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test with its tiers (`slow`, `browser`, `notebook`, `ray`): see tiers.py."""
    mark_tiers(items)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close llama-cpp-python's two module-level /dev/null handles once the tests are done.

    The library opens them at import and never closes them, so with `filterwarnings = error`
    the interpreter prints "Exception ignored ... ResourceWarning: unclosed file" at exit.
    Only model loading uses them, and no model is loaded after the session ends.
    """
    import sys

    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None and not handle.closed:
            handle.close()


@pytest.fixture(scope="session")
def ray_cluster():
    """A two-node Ray cluster on this machine (loopback only), started once for the session.

    Both nodes have one CPU. The head declares two GPUs and the other node one: Ray hands them
    out by CUDA_VISIBLE_DEVICES (nothing here uses CUDA), so one-model-actor-per-GPU placement
    is tested for real. The driver joins through `workbench.runtime.ray_backend.connect`, so
    later runs reuse that connection. Ray swaps a loopback address for the machine's network
    address unless told it runs a single-machine cluster (`LOOPBACK_SWITCH`).
    """
    from workbench.runtime.ray_backend import LOOPBACK_SWITCH, connect

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_USAGE_STATS_ENABLED", "0")
        patch.setenv(LOOPBACK_SWITCH, "0")  # "127.0.0.1" stays loopback, workers included
        import ray
        import ray._private.ray_constants as ray_constants
        from ray._common.utils import get_ray_address_file
        from ray.cluster_utils import Cluster

        patch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)  # when ray was imported earlier
        node = {"num_cpus": 1, "node_ip_address": "127.0.0.1"}
        head = {**node, "num_gpus": 2, "include_dashboard": False}
        cluster = Cluster(initialize_head=True, head_node_args=head)
        try:
            # Cluster records its address for a bare `ray.init()`; other processes on this
            # machine must not join the test cluster by accident
            address_file = Path(get_ray_address_file(None))
            if address_file.is_file() and address_file.read_text().strip() == cluster.address:
                address_file.unlink()
            cluster.add_node(**node, num_gpus=1)
            nodes = connect(cluster.address)
            assert len(nodes) == 2, nodes
            yield cluster
        finally:
            ray.shutdown()
            cluster.shutdown()


@pytest.fixture
def launch_results_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty results folder for launched runs; any run still live at the end is killed,
    so a failed test leaves no process behind."""
    import os
    import signal
    import time

    from workbench._processes import process_alive
    from workbench.runs.launch_states import launches

    folder = tmp_path / "results"
    yield folder
    pids = [s.launch.pid for s in launches(folder) if s.launch is not None]
    for pid in pids:
        if process_alive(pid):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(process_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)


# --------------------------------------------------------------------------- model servers


class ModelServer:
    """A running `workbench serve-model` subprocess: its base URL and its process."""

    def __init__(self, url: str, process: Any) -> None:
        self.url = url
        self.process = process

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown) and wait until it is gone."""
        self.process.kill()
        self.process.wait(timeout=10)


def _start_model_server(log_dir: Path, wait_s: float = 60.0):
    """Start `workbench serve-model` on a free loopback port; a context manager of ModelServer.

    Waits (at most `wait_s`) until GET /v1/models answers; stops the process by its PID after.
    """
    import contextlib
    import subprocess
    import sys
    import time

    import httpx
    from ports import free_port

    @contextlib.contextmanager
    def serve():
        port = free_port()
        url = f"http://127.0.0.1:{port}/v1"
        command = [sys.executable, "-m", "workbench.cli", "serve-model", "--port", str(port)]
        log_path = log_dir / f"serve-model-{port}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*command, "--n-threads", "1"], stdout=log, stderr=subprocess.STDOUT, cwd=REPO
            )
            try:
                deadline = time.monotonic() + wait_s
                while True:
                    if process.poll() is not None:
                        pytest.fail(f"serve-model exited early:\n{log_path.read_text()[-2000:]}")
                    try:
                        if httpx.get(f"{url}/models", timeout=1.0).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        pytest.fail(
                            f"serve-model not ready after {wait_s:g} s:\n"
                            f"{log_path.read_text()[-2000:]}"
                        )
                    time.sleep(0.2)
                yield ModelServer(url, process)
            finally:
                if process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        process.kill()
                        process.wait(timeout=10)

    return serve()


@pytest.fixture(scope="session")
def llm_server(tmp_path_factory: pytest.TempPathFactory):
    """`workbench serve-model` (the shipped SmolLM2, one thread) for the whole session.

    Yields its base URL, "http://127.0.0.1:<port>/v1"; the model is named "smollm2-135m".
    """
    with _start_model_server(tmp_path_factory.mktemp("llm-server")) as server:
        yield server.url


@pytest.fixture
def own_llm_server(tmp_path_factory: pytest.TempPathFactory):
    """A `workbench serve-model` for one test only (a `ModelServer`: the test may kill it)."""
    with _start_model_server(tmp_path_factory.mktemp("own-llm-server")) as server:
        yield server


@pytest.fixture
def start_llm_server(tmp_path_factory: pytest.TempPathFactory):
    """`start_llm_server()`: one more `workbench serve-model` (a `ModelServer` on a new port),
    e.g. a restarted server; every one started is stopped when the test ends."""
    import contextlib

    with contextlib.ExitStack() as servers:

        def start() -> ModelServer:
            log_dir = tmp_path_factory.mktemp("llm-server")
            return servers.enter_context(_start_model_server(log_dir))

        yield start


@pytest.fixture
def exact_bundle(tmp_path: Path):
    """A one-round bundle of 60 agents with its exact distributions, written by hand
    (`tests/exact_bundle.py`)."""
    from exact_bundle import write_exact_bundle

    return write_exact_bundle(tmp_path)


@pytest.fixture(scope="session")
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    """A real vLLM server for the session (`vllm`-marked tests; a module may start its own)."""
    yield from shared_server(tmp_path_factory)
