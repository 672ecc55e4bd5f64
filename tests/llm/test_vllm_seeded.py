"""A real vLLM server started with the flag that survives seeds (`--no-enable-chunked-prefill`).

Seeded games reproduce exactly on it, so a run whose engine is killed between rounds can be
shown to fail honestly (bundle `failed`, the error in the manifest), to resume after a restart,
and to end with the very responses an uninterrupted run gives. `bench served` times the run's
real, constrained workload against the official openai client here.
Run with: bash .ci/vllm-setup, then VLLM_PYTHON=... VLLM_MODEL_DIR=... pytest -m vllm
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from vllm_server import SERVED, SURVIVES_SEEDS, needs_vllm, running_server

from workbench.errors import ModelError
from workbench.results import Bundle, verify_bundle
from workbench.runtime import Simulation

pytestmark = needs_vllm
REPO = Path(__file__).resolve().parents[2]
KEY = ["round", "agent_id"]
ANSWER = ["guess", "status", "raw"]


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory):
    with running_server(tmp_path_factory.mktemp("vllm-seeded"), SURVIVES_SEEDS) as server:
        yield server


def seeded_config(make_config, server, **extra):
    model = {
        "kind": "openai",
        "base_urls": [server.url],
        "name": SERVED,
        "max_concurrency": 16,
        "max_retries": 2,
        "sampling": "server",  # seeded generations, one per agent
    }
    return make_config(
        policy={"kind": "llm"}, n_agents=30, rounds=2, agents_per_shard=15, model=model, **extra
    )


def answers(bundle: Bundle) -> pd.DataFrame:
    table = bundle.responses()[KEY + ANSWER]
    return table.sort_values(KEY).reset_index(drop=True)


def test_bench_served_times_the_constrained_workload(vllm) -> None:
    from workbench.bench.served import served_bench

    report = served_bench(n=40, url=vllm.url, concurrency=8, repeats=2)
    print(report)  # the README quotes these numbers
    assert "(vllm 0.32.0)" in report and "constraint structured_outputs" in report
    assert "(40/40 valid answers)" in report
    assert float(re.search(r"ratio workbench local / direct\s+([\d.]+)", report).group(1)) > 0


def test_an_engine_killed_between_rounds_fails_then_resumes_to_the_same_answers(
    vllm, make_config, tmp_path: Path
) -> None:
    config = seeded_config(make_config, vllm)
    reference = Simulation(config).run(out_dir=tmp_path / "reference", progress=False)
    assert reference.status == "complete" and (reference.responses()["status"] == "ok").all()

    def kill_after_round_1(number: int, stats, seconds: float) -> None:
        if number == 1:
            vllm.kill_engine()

    killed_dir = tmp_path / "killed"
    with pytest.raises(ModelError) as raised:
        Simulation(config).run(out_dir=killed_dir, progress=False, on_round=kill_after_round_1)
    (path,) = killed_dir.iterdir()
    failed = Bundle.open(path)
    assert failed.status == "failed" and len(failed.rounds()) == 1
    assert failed.error and "round 2" in failed.error
    assert str(raised.value).splitlines()[0] in failed.error
    # the engine's death as the server told it, not the refused connections after it exited
    assert "HTTP 500: EngineCore encountered an issue" in failed.error, failed.error

    vllm.wait_gone()
    vllm.start()  # the same port: the stored config's endpoint is good again
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "run", "--resume", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = Bundle.open(path)
    assert resumed.status == "complete" and len(resumed.rounds()) == 2
    assert verify_bundle(path).ok
    pd.testing.assert_frame_equal(answers(resumed), answers(reference))
