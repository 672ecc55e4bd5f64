"""The estimate knows the cluster (issue 38, item 4): K engines, each round planned and timed.

A model whose logits are a hash of the node (tests/hash_scorer.py) stands in for the LLM: the
plan needs only the config, K and the prompts' tokens, so no Ray cluster is started here. The
estimate's division is checked against the plan of the shards' own reports, cut as the Ray
backend cuts them (`prompt_report.shard_report` on `split_into_shards`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.hash_scorer import HashScorer
from workbench.agents.prompts import Prompts
from workbench.agents.shard import RoundContext, split_into_shards
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.runtime import Simulation
from workbench.runtime.cluster_plan import plan_round
from workbench.runtime.estimate import estimate_run
from workbench.runtime.estimate_cluster import ClusterShape, cluster_shape, shard_engine_agents
from workbench.runtime.prompt_report import shard_report


class WholeChatScorer(HashScorer):
    """Hash logits over a prompt's every message (the system prompt alone is shared by all)."""

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        return [
            tuple("\n".join(m["content"] for m in r.messages).encode()[-400:]) for r in requests
        ]


class HashModel(ChatModel):
    """A model that draws answers in distribution mode through hash logits, and generates one
    answer per request otherwise (recording each batch's size)."""

    def __init__(self, draws: bool = True) -> None:
        self.scorer = WholeChatScorer()
        self.draws = draws
        self.batches: list[int] = []

    @property
    def identity(self) -> dict[str, Any]:
        return {"name": "hash"}

    def node_scorer(self) -> HashScorer | None:
        return self.scorer if self.draws else None

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        self.batches.append(len(requests))
        return [ChatResult("42") for _ in requests]


def on_ray(config, **backend: Any):
    data = config.model_dump(mode="json")
    data["backend"] = {"kind": "ray", "agents_per_shard": None, **backend}
    return type(config).model_validate(data)


@pytest.fixture
def ray_config(make_config):
    config = make_config(policy={"kind": "llm"}, n_agents=120, rounds=3)
    return on_ray(config, model_placement="node", shards_per_node=2)


def test_the_cluster_shape_is_the_runs_engines_and_shards(
    make_config, ray_config, monkeypatch
) -> None:
    from workbench.runtime import estimate_cluster

    shape = cluster_shape(ray_config, nodes=4)
    assert (shape.engines, shape.shard_size) == (4, 15)
    assert shape.shard_size == ray_config.backend.shard_size(120, 4)
    assert "K = 4 engine(s)" in shape.note and "as given" in shape.note
    # not connected to Ray (the session's test cluster may be): K assumed 1, and said so
    monkeypatch.setattr(estimate_cluster, "_connected_nodes", lambda: None)
    alone = cluster_shape(ray_config)
    assert alone.engines == 1 and "give --nodes K" in alone.note
    monkeypatch.setattr(estimate_cluster, "_connected_nodes", lambda: 3)
    joined = cluster_shape(ray_config)
    assert joined.engines == 3 and "connected Ray cluster" in joined.note
    shard = on_ray(make_config(policy={"kind": "llm"}, n_agents=120), model_placement="shard")
    assert cluster_shape(shard, nodes=4).engines == 1  # every shard its own model: no plan
    local = make_config(policy={"kind": "llm"}, n_agents=120)
    assert cluster_shape(local, nodes=4) == ClusterShape()


def test_each_round_is_divided_by_the_runs_plan_and_takes_its_largest_share(
    ray_config,
) -> None:
    sim = Simulation(ray_config, model=HashModel())
    k = 4
    shape = cluster_shape(ray_config, nodes=k)
    one = asyncio.run(estimate_run(ray_config, HashModel(), sim.personas))
    est = asyncio.run(estimate_run(ray_config, HashModel(), sim.personas, shape))
    assert est.engines == k and one.engines == 1 and "K = 4" in est.text()
    for row, alone in zip(est.rounds, one.rounds, strict=True):
        assert len(row.engines) == k and alone.engines == ()
        assert (row.prompts, row.tokens, row.nodes) == (alone.prompts, alone.tokens, alone.nodes)
        assert sum(e.prompts for e in row.engines) == row.prompts  # each prompt on one engine
        assert row.seconds == max(e.seconds for e in row.engines) < alone.seconds
    # round 1 against the plan of the shards' own reports, cut as the Ray backend cuts them
    shards = split_into_shards(sim.personas, shape.shard_size, 3)
    model = HashModel()

    async def lengths(chats):
        return [len(t) for t in await model.scorer.prompt_tokens(chats)]

    ctx = RoundContext.of(ray_config)
    prompts = Prompts.of(ray_config)
    reports = [asyncio.run(shard_report(prompts, s, ctx, lengths)) for s in shards]
    assert len(shards) == 8 and all(len(s) == 15 for s in shards)
    plan = plan_round(pd.concat(reports, ignore_index=True), k)
    first = est.rounds[0].engines
    assert [(e.prompts, e.tokens) for e in first] == [(e.prompts, e.tokens) for e in plan.engines]
    table = est.engine_table()
    assert list(table.columns) == ["round", "engine", "prompts", "tokens", "seconds"]
    assert len(table) == 3 * k and "each engine's share" in est.text()


def test_later_rounds_walk_the_round_befores_prompts_unless_drawn_from_round_one(
    ray_config,
) -> None:
    personas = Simulation(ray_config, model=HashModel()).personas
    chained, first = HashModel(), HashModel()
    a = asyncio.run(estimate_run(ray_config, chained, personas))
    b = asyncio.run(estimate_run(ray_config, first, personas, later="first"))
    counts = [(r.prompts, r.tokens, r.nodes) for r in (a.rounds[0], b.rounds[0])]
    assert counts[0] == counts[1]  # round 1 is counted, the same either way
    # chained walks round 2's prompts (for round 3's draws); first walks round 1's alone
    assert len(set(chained.scorer.scored)) > len(set(first.scorer.scored))
    for row in a.rounds:
        assert 0 < row.prompts <= row.prompts_bound <= 120


def test_one_generation_per_agent_takes_the_rate_of_a_batch_at_max_concurrency(
    make_config,
) -> None:
    config = make_config(
        policy={"kind": "llm"}, n_agents=30, rounds=2, model={"max_concurrency": 8}
    )
    model = HashModel(draws=False)
    personas = Simulation(config, model=model).personas
    est = asyncio.run(estimate_run(config, model, personas))
    assert model.batches == [8]  # one batch of max_concurrency requests, timed together
    assert est.mode == "one generation per agent (rate of a batch of 8 at once)"
    assert [r.prompts for r in est.rounds] == [30, 30]
    ray = on_ray(config, model_placement="node", agents_per_shard=4)
    shape = cluster_shape(ray, nodes=3)
    on_three = asyncio.run(estimate_run(ray, HashModel(draws=False), personas, shape))
    busiest = shard_engine_agents(shape, np.arange(30))
    assert busiest.tolist() == [12, 10, 8]  # shards of 4: 0,3,6 | 1,4,7(2 agents) | 2,5
    for row in on_three.rounds:
        assert [e.prompts for e in row.engines] == [12, 10, 8]
        assert row.seconds == max(e.seconds for e in row.engines)
