"""Distribution mode on the real embedded model is exact: every answer of a run equals the one
its agent draws alone from a cleared context (issue 19, check 4a), and over many agents at one
prompt the answers' frequencies match the model's own probabilities (check 4b). The same
responses on every backend, shard count, resume and cache: tests/llm/test_llamacpp_determinism.py.
"""

from __future__ import annotations

import asyncio
import itertools

import numpy as np
import pytest
from answer_law import chi_square_p, expected_answers
from run_configs import run_config

from workbench.agents import streams
from workbench.config import GameSpec
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.distribution.walk import STEP_STREAM, PromptGroup, TrieCounts, draw_answers
from workbench.runtime import Simulation
from workbench.runtime.alone_check import check_alone

pytestmark = pytest.mark.slow


def test_every_answer_equals_the_agent_alone(education_spec, embedded_model, tmp_path) -> None:
    """Check 4(a): 10 agents of a 400-agent run, two rounds, recomputed one by one (each from
    a cleared context: nearly two seconds per answer here, so 20 answers; `workbench bench
    scale --exact-agents N` checks more)."""
    config = run_config(
        education_spec,
        name="exact",
        seed=3,
        n_agents=400,
        policy={"kind": "llm"},
        model={"kind": "embedded", "temperature": 0.9, "max_tokens": 4},
    )
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    assert bundle.model["sampling"]["mode"] == "workbench"
    responses = bundle.responses()
    assert responses["raw"].nunique() > 10  # agents of one prompt answer differently
    report = check_alone(bundle, embedded_model, agents=10)
    assert report.checked == 20
    assert report.mismatches == []


def test_a_changed_answer_is_caught(education_spec, embedded_model, tmp_path) -> None:
    """The check fails when a bundle's answer is not the agent's own."""
    from workbench.results import Bundle

    config = run_config(
        education_spec,
        rounds=1,
        name="exact",
        seed=4,
        n_agents=30,
        policy={"kind": "llm"},
        model={"kind": "embedded", "max_tokens": 4},
    )
    bundle = Simulation(config, model=embedded_model).run(out_dir=tmp_path, progress=False)
    import pyarrow.parquet as pq

    (part,) = bundle.response_files(1)
    table = pq.read_table(part)
    raw = table.column("raw").to_pylist()
    raw[0] = "7" if raw[0] != "7" else "8"
    pq.write_table(table.set_column(table.schema.get_field_index("raw"), "raw", [raw]), part)
    report = check_alone(Bundle.open(bundle.path), embedded_model, agents=3)
    assert not report.exact and [m["agent_id"] for m in report.mismatches] == [0]


def test_frequencies_match_the_models_probabilities(embedded_model) -> None:
    """Check 4(b): 20,000 agents at one prompt, the answers' frequencies against the model's
    own probabilities; the same frequencies are rejected against a wrong rule."""
    params = SamplingParams(temperature=1.0, top_p=0.98, max_tokens=4)
    request = ChatRequest(
        (
            {"role": "system", "content": "You play a number game."},
            {"role": "user", "content": "Pick a whole number between 0 and 100. Reply with it."},
        ),
        constraint=OutputConstraint(integer_range=(0, 100)),
    )
    n = 20_000
    group = PromptGroup(request, np.arange(n, dtype=np.int64))

    def uniforms(ids: np.ndarray, depth: int) -> np.ndarray:
        return streams.uniform(9, ids, 1, STEP_STREAM + depth)

    counts = TrieCounts()
    scorer = embedded_model.node_scorer()
    (answer,) = asyncio.run(draw_answers(scorer, [group], params, uniforms, counts))
    texts = np.asarray(answer.texts, dtype=object)[answer.leaf]
    observed = {t: int(c) for t, c in zip(*np.unique(texts, return_counts=True), strict=True)}
    assert len(observed) >= 5 and counts.nodes < 300  # many answers, few model evaluations
    expected = expected_answers(embedded_model, request, params)
    assert sum(expected.values()) == pytest.approx(1.0)
    assert set(observed) <= set(expected)
    assert chi_square_p(observed, expected, n) > 1e-4
    hotter = SamplingParams(temperature=1.4, top_p=0.98, max_tokens=4)
    wrong = expected_answers(embedded_model, request, hotter)
    assert chi_square_p(observed, wrong, n) < 1e-8


def test_groups_and_prompts_are_columns(education_spec) -> None:
    """Agents with equal personas and histories share one prompt group, and no others do."""
    from workbench.agents.prompts import members_of, prompt_groups
    from workbench.agents.shard import AgentShard, RoundContext
    from workbench.population import sample_population

    personas = sample_population(education_spec, 2000, 1)
    shard = AgentShard(0, personas, 3)
    rng = np.random.default_rng(0)
    shard.guesses[:, 0] = rng.integers(0, 4, 2000)
    shard.guesses[rng.random(2000) < 0.1, 0] = np.nan
    ctx = RoundContext(2, 1, GameSpec(), 2000)
    codes, firsts = prompt_groups(shard, ctx)
    keys = [
        (p, None if np.isnan(g) else g)
        for p, g in zip(personas["persona"], shard.guesses[:, 0], strict=True)
    ]
    assert len(firsts) == len(set(keys))
    for group in members_of(codes, len(firsts)):
        assert len({keys[i] for i in group.tolist()}) == 1
    for a, b in itertools.combinations(firsts.tolist(), 2):
        assert keys[a] != keys[b]
