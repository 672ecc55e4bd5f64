"""The embedded model's answers are a function of each agent's own prompt, sampling settings and
seed: the same config and seed give identical responses tables on the local backend with one or
three shards, on Ray with 4 shard actors, after a cancel and a resume, from the response
cache, with prefix reuse off, and with 1 or 2 threads (real llama.cpp, the shipped SmolLM2).
Each is checked in distribution mode at 1,000 agents (answers drawn through the answer trie) and
with llama.cpp's own sampler at 12 agents (one generation per agent).

Before canonical prompt pieces (`workbench.llm.embedded.prefix_pieces`), reused prefixes cut
each prompt where its batch neighbour stopped matching, and the quickstart's third round mean
was 29.33 locally and 28.92 on Ray.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from run_configs import run_config

from workbench.config import BackendSpec, RunConfig
from workbench.llm.llamacpp import LlamaCppModel
from workbench.results import Bundle
from workbench.runtime import Simulation

pytestmark = pytest.mark.slow

MODES = {"workbench": 1000, "server": 12}
"""Agents per run by `model.sampling`: distribution mode at N >= 1,000, per agent at 12."""


def make_config(education_spec, sampling: str, n_agents: int) -> RunConfig:
    """LLM agents of the paper's education population, two rounds, one local shard."""
    return run_config(
        education_spec,
        agents_per_shard=n_agents,
        name="determinism",
        seed=11,
        n_agents=n_agents,
        policy={"kind": "llm"},
        model={"kind": "embedded", "temperature": 0.7, "max_tokens": 4, "sampling": sampling},
    )


@pytest.fixture(scope="module", params=list(MODES))
def config(request, education_spec) -> RunConfig:
    """The module's run, in each sampling mode."""
    return make_config(education_spec, request.param, MODES[request.param])


@pytest.fixture(scope="module")
def model(config: RunConfig, embedded_model) -> LlamaCppModel:
    """The session's engine, drawing as the config's `model.sampling` says."""
    if config.model.sampling == "server":
        return LlamaCppModel(n_threads=1, sampling="server").load()
    return embedded_model


def answers(bundle: Bundle) -> pd.DataFrame:
    """What the agents answered, without what measures time."""
    assert bundle.status == "complete", bundle.manifest.get("error")
    frame = bundle.responses().drop(columns="latency_s")
    return frame.sort_values(["round", "agent_id"]).reset_index(drop=True)


def with_backend(config: RunConfig, **backend: Any) -> RunConfig:
    return config.model_copy(update={"backend": BackendSpec(**backend)})


@pytest.fixture(scope="module")
def reference(config: RunConfig, model, tmp_path_factory) -> pd.DataFrame:
    """The local run with one shard: the answers every other way of running must give."""
    out = tmp_path_factory.mktemp("reference")
    run = Simulation(config, model=model).run(out_dir=out, progress=False)
    assert run.model["sampling"]["mode"] == config.model.sampling
    frame = answers(run)
    assert frame["status"].eq("ok").all()
    assert frame["guess"].nunique() > 2  # the model really answers, differently per agent
    return frame


def test_three_local_shards_answer_as_one(config, model, reference, tmp_path) -> None:
    sharded = with_backend(config, agents_per_shard=-(-config.n_agents // 3))
    run = Simulation(sharded, model=model).run(out_dir=tmp_path, progress=False)
    pd.testing.assert_frame_equal(answers(run), reference)


@pytest.mark.parametrize("sampling", list(MODES))
def test_no_prefix_reuse_and_two_threads_answer_the_same(
    education_spec, sampling: str, tmp_path
) -> None:
    """Every prompt evaluated from scratch, on a 2-thread engine: the same answers as one thread
    with prefix reuse (6 agents: from scratch, each distinct prompt costs its whole length)."""
    config = make_config(education_spec, sampling, 6)
    one = LlamaCppModel(n_threads=1, sampling=sampling).load()
    reference = answers(Simulation(config, model=one).run(out_dir=tmp_path / "a", progress=False))
    model = LlamaCppModel(n_threads=2, n_ctx=config.model.n_ctx, sampling=sampling).load()
    model.reuse_prefix = False
    run = Simulation(config, model=model).run(out_dir=tmp_path / "b", progress=False)
    pd.testing.assert_frame_equal(answers(run), reference)
    if sampling == "server":
        assert model.counters.evaluated_tokens == model.counters.prompt_tokens


def test_cancelled_and_resumed_answers_as_uninterrupted(config, model, reference, tmp_path) -> None:
    sim = Simulation(config, model=model)
    cancelled = sim.run(out_dir=tmp_path, progress=False, on_round=lambda number, *_: sim.cancel())
    assert cancelled.status == "cancelled" and cancelled.rounds_count == 1
    resumed = Simulation.resume(cancelled.path, model=model).run(progress=False)
    pd.testing.assert_frame_equal(answers(resumed), reference)


def test_the_response_cache_answers_as_the_model(config, reference, tmp_path: Path) -> None:
    cached = config.model_copy(
        update={"model": config.model.model_copy(update={"cache": str(tmp_path / "c.sqlite")})}
    )
    first = Simulation(cached).run(out_dir=tmp_path / "first", progress=False)
    second = Simulation(cached).run(out_dir=tmp_path / "second", progress=False)
    pd.testing.assert_frame_equal(answers(first), reference)
    pd.testing.assert_frame_equal(answers(second), reference)


@pytest.mark.ray
def test_ray_answers_as_local(config, reference, ray_cluster, tmp_path) -> None:
    """Shard actors on the session's two nodes ask their node's one embedded engine: four of
    them, so both nodes and two actors sharing each node's engine (one actor alone is the
    same path with less in it)."""
    shards = 4
    on_ray = with_backend(
        config,
        kind="ray",
        address=ray_cluster.address,
        agents_per_shard=config.n_agents // shards,
    )
    run = Simulation(on_ray).run(out_dir=tmp_path, progress=False)
    assert run.manifest["backend"]["shards"] == shards
    assert run.manifest["backend"]["model_placement"] == "node"
    pd.testing.assert_frame_equal(answers(run), reference)
