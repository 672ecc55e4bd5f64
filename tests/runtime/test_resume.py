"""Cancel a run, resume it, and get the bundle an uninterrupted run gives.

Cancelling marks the bundle "cancelled" after its last full round; `Simulation.resume(bundle)`
(or `workbench run --resume BUNDLE`) plays the remaining rounds into the same bundle, with the
agents' memory of earlier rounds restored from it, so the final responses and rounds equal an
uninterrupted run's. An LLM policy on a fake model whose answer hashes its prompt shows that the
restored memory (the "Your own numbers so far" line) is the very memory the agents had.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from resume_helpers import LEVEL_K, PromptHashModel, cancel_after, timeless

from workbench.errors import BundleError, ConfigError, RoundFailedError
from workbench.llm import sampling_params
from workbench.llm.base import ChatResult
from workbench.results import Bundle, BundleWriter, verify_bundle
from workbench.runtime import Simulation


def assert_same_final_bundle(resumed: Bundle, uninterrupted: Bundle, n_agents: int) -> None:
    assert resumed.status == "complete", resumed.manifest.get("error")
    report = verify_bundle(resumed.path)
    assert report.ok, str(report)
    for left, right in zip(timeless(resumed), timeless(uninterrupted), strict=True):
        pd.testing.assert_frame_equal(left, right)
    pd.testing.assert_frame_equal(resumed.personas(), uninterrupted.personas())
    frame = resumed.responses()
    rounds = uninterrupted.rounds_count
    assert len(frame) == n_agents * rounds and not frame.duplicated(["round", "agent_id"]).any()
    assert resumed.rounds_count == rounds
    assert [r["round"] for r in resumed.manifest["rounds"]] == list(range(1, rounds + 1))


def cancelled_run(config, out_dir: Path, after_round: int, **kwargs) -> Bundle:
    sim = Simulation(config, **kwargs)
    bundle = sim.run(out_dir=out_dir, progress=False, on_round=cancel_after(sim, after_round))
    assert bundle.status == "cancelled"
    assert bundle.rounds_count == after_round
    assert sorted(bundle.responses()["round"].unique()) == list(range(1, after_round + 1))
    assert "CancelledError" in bundle.manifest["error"]
    return bundle


# --------------------------------------------------------------------------- level-k


@pytest.mark.parametrize("after_round", [1, 3])
def test_level_k_cancelled_then_resumed_equals_an_uninterrupted_run(
    after_round, make_config, tmp_path
):
    config = make_config(policy=LEVEL_K, n_agents=10, rounds=4, seed=13, agents_per_shard=3)
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    cancelled = cancelled_run(config, tmp_path / "parts", after_round)

    resumed = Simulation.resume(cancelled.path).run(progress=False)
    assert resumed.path == cancelled.path and resumed.run_id == cancelled.run_id
    assert_same_final_bundle(resumed, whole, 10)
    assert [r["after_round"] for r in resumed.manifest["resumed"]] == [after_round]
    assert resumed.manifest["error"] is None
    assert [p.name for p in (tmp_path / "parts").iterdir()] == [cancelled.run_id]


def test_resume_twice_after_two_cancels(make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=7, rounds=4, seed=2)
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    first = cancelled_run(config, tmp_path / "parts", 1)
    sim = Simulation.resume(first.path)
    second = sim.run(progress=False, on_round=cancel_after(sim, 3))
    assert second.status == "cancelled" and second.rounds_count == 3
    resumed = Simulation.resume(first.path).run(progress=False)
    assert_same_final_bundle(resumed, whole, 7)
    assert [r["after_round"] for r in resumed.manifest["resumed"]] == [1, 3]


def test_cancel_after_the_last_round_completes_the_bundle(make_config, tmp_path):
    sim = Simulation(make_config(policy=LEVEL_K, rounds=2))
    bundle = sim.run(out_dir=tmp_path, progress=False, on_round=cancel_after(sim, 2))
    assert bundle.is_complete and verify_bundle(bundle.path).ok
    with pytest.raises(BundleError, match="already complete; nothing to resume"):
        Simulation.resume(bundle.path)


# --------------------------------------------------------------------------- LLM memory


@pytest.mark.parametrize("after_round", [1, 2])
def test_llm_cancelled_then_resumed_restores_each_agents_memory(after_round, make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=3, seed=4, agents_per_shard=3)
    model = PromptHashModel()
    whole = Simulation(config, model=model).run(out_dir=tmp_path / "whole", progress=False)
    assert whole.responses()["status"].eq("ok").all()
    assert model.own_numbers_seen == 8 * 2  # rounds 2 and 3 showed every agent its numbers

    cancelled = cancelled_run(config, tmp_path / "parts", after_round, model=PromptHashModel())
    later = PromptHashModel()
    resumed = Simulation.resume(cancelled.path, model=later).run(progress=False)
    assert later.own_numbers_seen == 8 * (3 - after_round)
    assert_same_final_bundle(resumed, whole, 8)
    assert resumed.manifest["model"] == {
        "engine": "fake",
        "name": "prompt-hash",
        "answers": "one generation per agent: the model's own sampler",
        "sampling_law": sampling_params(config.model).describe(),
    }


def test_llm_resume_without_the_memory_would_answer_differently(make_config, tmp_path):
    """The fake model is sensitive to memory: a wiped memory changes round 2's answers."""
    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=2, seed=4)
    whole = Simulation(config, model=PromptHashModel()).run(out_dir=tmp_path / "w", progress=False)
    cancelled = cancelled_run(config, tmp_path / "parts", 1, model=PromptHashModel())
    sim = Simulation.resume(cancelled.path, model=PromptHashModel())
    sim._resume = sim._resume.__class__(sim._resume.path, sim._resume.targets, None)  # forget
    forgetful = sim.run(progress=False)
    second = forgetful.responses(2)["guess"].to_numpy()
    assert (second != whole.responses(2)["guess"].to_numpy()).any()


# --------------------------------------------------------------------------- interruptions


def test_cancel_from_another_thread_mid_round_then_resume(make_config, tmp_path):
    config = make_config(policy={"kind": "random", "latency_s": 0.5}, n_agents=6, rounds=3)
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    sim = Simulation(config)
    timer = threading.Timer(0.6, sim.cancel)  # during round 1 or 2 (each round waits 0.5 s)
    timer.start()
    try:
        bundle = sim.run(out_dir=tmp_path / "parts", progress=False)
    finally:
        timer.cancel()
    assert bundle.status == "cancelled" and bundle.rounds_count < 3
    done = bundle.rounds_count
    assert bundle.rounds()["round"].tolist() == list(range(1, done + 1))
    resumed = Simulation.resume(bundle.path).run(progress=False)
    assert_same_final_bundle(resumed, whole, 6)


def half_written(bundle: Bundle, whole: Bundle) -> None:
    """Make `bundle` (cancelled after round 1) look killed while writing round 2: its first
    part file, its groups rows and its rounds.parquet row written, the manifest not yet."""
    part = whole.response_files(2)[0]
    (bundle.path / "responses" / "round-2").mkdir()
    shutil.copy(part, bundle.path / "responses" / "round-2" / part.name)
    for name in ("rounds.parquet", "groups.parquet"):
        table = pq.read_table(whole.path / name)
        pq.write_table(table.filter(pc.less_equal(table.column("round"), 2)), bundle.path / name)
    manifest = json.loads((bundle.path / "manifest.json").read_text())
    manifest.update(status="running", finished_at=None, error=None)
    (bundle.path / "manifest.json").write_text(json.dumps(manifest))
    assert Bundle.open(bundle.path).rounds_count == 1
    assert set(Bundle.open(bundle.path).groups()["round"]) == {1, 2}


def test_a_killed_run_with_a_half_written_round_resumes_cleanly(make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=8, rounds=3, seed=9, game={"group_by": "gender"})
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    bundle = cancelled_run(config, tmp_path / "parts", 1)
    half_written(bundle, whole)

    resumed = Simulation.resume(bundle.path).run(progress=False)
    assert_same_final_bundle(resumed, whole, 8)
    pd.testing.assert_frame_equal(resumed.groups(), whole.groups())


def test_reopen_drops_what_a_round_that_never_ended_left(make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=8, rounds=3, seed=9, game={"group_by": "gender"})
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    bundle = cancelled_run(config, tmp_path / "parts", 1)
    half_written(bundle, whole)

    with BundleWriter.reopen(bundle.path) as writer:
        writer.finish("cancelled")  # resumed, then cancelled again before round 2 ended
    again = Bundle.open(bundle.path)
    assert again.status == "cancelled" and again.manifest["resumed"][0]["after_round"] == 1
    assert not (bundle.path / "responses" / "round-2").exists()
    assert again.rounds()["round"].tolist() == [1]
    assert set(again.groups()["round"]) == {1}
    assert sorted(again.manifest["files"]) == [
        "events.jsonl",
        "groups.parquet",
        "personas.parquet",
        "responses/round-1/part-00000.parquet",
        "responses/round-1/part-00001.parquet",
        "rounds.parquet",
    ]
    with pytest.raises(BundleError, match="already complete"):
        BundleWriter.reopen(whole.path)


def test_a_failed_run_can_be_resumed(make_config, tmp_path):
    class FailsInRoundTwo:
        identity = {"engine": "fake", "name": "fails-in-round-2"}

        def __init__(self) -> None:
            self.model = PromptHashModel()

        async def generate(self, requests, params):
            if any("Round 2 of" in r.messages[1]["content"] for r in requests):
                raise RuntimeError("the model server went away")
            return await self.model.generate(requests, params)

    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=2, seed=1)
    whole = Simulation(config, model=PromptHashModel()).run(out_dir=tmp_path / "w", progress=False)
    with pytest.raises(RuntimeError, match="went away"):
        Simulation(config, model=FailsInRoundTwo()).run(out_dir=tmp_path / "parts", progress=False)
    (path,) = (tmp_path / "parts").iterdir()
    assert Bundle.open(path).status == "failed"
    resumed = Simulation.resume(path, model=PromptHashModel()).run(progress=False)
    assert_same_final_bundle(resumed, whole, 6)


class DeadInRoundTwo:
    """PromptHashModel until round 2, whose every answer then fails as a dead server's would."""

    identity = {"engine": "fake", "name": "dead-in-round-2"}

    def __init__(self) -> None:
        self.model = PromptHashModel()

    async def generate(self, requests, params):
        if any("Round 2 of" in r.messages[1]["content"] for r in requests):
            error = "ConnectError: [Errno 111] Connection refused"
            return [ChatResult(text=None, error=error, error_kind="model_error") for _ in requests]
        return await self.model.generate(requests, params)


def test_a_round_failed_by_a_dead_model_is_replayed_on_resume(make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=3, seed=1, agents_per_shard=4)
    whole = Simulation(config, model=PromptHashModel()).run(out_dir=tmp_path / "w", progress=False)
    with pytest.raises(RoundFailedError, match="round 2: 6 of 6 answers failed"):
        Simulation(config, model=DeadInRoundTwo()).run(out_dir=tmp_path / "parts", progress=False)
    (path,) = (tmp_path / "parts").iterdir()
    failed = Bundle.open(path)
    assert failed.status == "failed" and failed.rounds_count == 1
    assert "RoundFailedError: round 2" in failed.error
    assert not (path / "responses" / "round-2").exists()

    resumed = Simulation.resume(path, model=PromptHashModel()).run(progress=False)
    assert_same_final_bundle(resumed, whole, 6)
    assert resumed.manifest["error"] is None
    assert [r["after_round"] for r in resumed.manifest["resumed"]] == [1]
    events = [(e["kind"], e.get("status"), e.get("resumed_after")) for e in resumed.events()]
    starts_and_ends = [e for e in events if e[0] in ("run_started", "run_finished")]
    assert starts_and_ends == [
        ("run_started", None, 0),
        ("run_finished", "failed", None),
        ("run_started", None, 1),
        ("run_finished", "complete", None),
    ]
    rounds = [e["round"] for e in resumed.events() if e["kind"] == "round_finished"]
    assert rounds == [1, 2, 3]  # the failed round 2 never finished before the resume


def test_a_resume_may_reach_the_model_at_new_base_urls(make_config, tmp_path):
    old, new = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
    model = {"kind": "openai", "base_urls": [old], "name": "m"}
    config = make_config(policy={"kind": "llm"}, n_agents=4, rounds=2, model=model)
    run = Simulation(config, model=DeadInRoundTwo())
    with pytest.raises(RoundFailedError):
        run.run(out_dir=tmp_path, progress=False)
    (path,) = tmp_path.iterdir()
    sim = Simulation.resume(path, base_urls=[new], model=PromptHashModel())
    assert sim.config.model.base_urls == [new]
    resumed = sim.run(progress=False)
    assert resumed.is_complete and verify_bundle(resumed.path).ok
    assert resumed.config.model.base_urls == [old]  # the config the run started with
    assert resumed.manifest["resumed"][-1]["changes"] == {"model.base_urls": [new]}
    started = [e for e in resumed.events() if e["kind"] == "run_started"]
    assert started[-1]["config"]["model"]["base_urls"] == [new]  # what the resumed run used


def test_new_base_urls_need_an_openai_model(make_config, tmp_path):
    sim = Simulation(make_config(policy=LEVEL_K, rounds=2))
    bundle = sim.run(out_dir=tmp_path, progress=False, on_round=cancel_after(sim, 1))
    with pytest.raises(ConfigError, match="^base_urls: the run's model is kind 'embedded'"):
        Simulation.resume(bundle.path, base_urls=["http://127.0.0.1:9/v1"])


# --------------------------------------------------------------------------- command line


@pytest.mark.slow
def test_cli_run_resume_finishes_a_cancelled_bundle(make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=9, rounds=3, seed=5)
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    bundle = cancelled_run(config, tmp_path / "parts", 2)
    result = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "run", "--resume", str(bundle.path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert f"bundle: {bundle.path}" in result.stdout
    assert_same_final_bundle(Bundle.open(bundle.path), whole, 9)
