"""One sampling law for every path (issue 26, item 0): many agents at one prompt answer from
one distribution whether the workbench draws them (`sampling: workbench`, distribution mode) or
the embedded model samples each itself (`sampling: server`, llama.cpp's samplers), and that
distribution is the law's, computed exactly node by node from the engine's own evaluation of
each node (the one both paths sample from: a node's logits evaluated another way, e.g. the
prompt in one batch, differ by enough to swap two near-tied tokens at a top-p cut). The chain
the embedded model used to sample with (llama-cpp-python's: top-p and min-p 0.05 at
temperature 1, the temperature last) fails the same test, so the test tells the laws apart.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import numpy as np
import pytest
from answer_law import expected_answers
from scipy import stats

from workbench.agents import streams
from workbench.llm import llamacpp
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.distribution.walk import STEP_STREAM, PromptGroup, draw_answers
from workbench.llm.embedded.llamacpp_sampling import IntegerCandidates
from workbench.llm.llamacpp import LlamaCppModel

pytestmark = pytest.mark.slow

N = 1200
"""Agents at the prompt: at the issue's measured 3-5% of answers outside the law's support
under the old chain, about 50 such answers; the law's own draws have none."""
REQUEST = ChatRequest(
    (
        {"role": "system", "content": "You are playing a game with 1000 other players."},
        {
            "role": "user",
            "content": "Each player picks a whole number from 0 to 100. The winner is the one "
            "closest to 2/3 of the average. Reply with your number only.",
        },
    ),
    constraint=OutputConstraint(integer_range=(0, 100)),
)


@pytest.fixture(scope="module")
def per_agent_model():
    """The embedded model sampling each answer itself (`sampling: server`)."""
    model = LlamaCppModel(n_threads=1, sampling="server").load()
    yield model
    model.close()


def per_agent_answers(model: LlamaCppModel, params: SamplingParams) -> Counter[str]:
    """N agents' answers, one generation each, each agent's own seed."""
    requests = [
        ChatRequest(REQUEST.messages, seed=seed, constraint=REQUEST.constraint) for seed in range(N)
    ]
    results = asyncio.run(model.generate(requests, params))
    assert all(r.error is None for r in results), [r.error for r in results if r.error][:3]
    return Counter(r.text for r in results)


def drawn_answers(model: LlamaCppModel, params: SamplingParams) -> Counter[str]:
    """N agents' answers drawn by the workbench from the answer trie (distribution mode)."""
    group = PromptGroup(REQUEST, np.arange(N, dtype=np.int64))

    def uniforms(ids: np.ndarray, depth: int) -> np.ndarray:
        return streams.uniform(5, ids, 1, STEP_STREAM + depth)

    (answer,) = asyncio.run(draw_answers(model.node_scorer(), [group], params, uniforms))
    return Counter(answer.texts[i] for i in answer.leaf.tolist())


def fit(observed: Counter[str], expected: dict[str, float]) -> tuple[int, float]:
    """(answers drawn where the law puts no mass, Pearson's p over the answers expected at
    least 5 times, the rest pooled)."""
    n = sum(observed.values())
    outside = sum(c for a, c in observed.items() if expected.get(a, 0.0) == 0.0)
    big = [a for a, p in expected.items() if p * n >= 5]
    obs = [observed.get(a, 0) for a in big]
    exp = [expected[a] * n for a in big]
    obs.append(n - sum(obs))
    exp.append(n - sum(exp))
    if exp[-1] < 5:  # too little mass elsewhere to test on its own: merge it into the last
        obs[-2:] = [obs[-2] + obs[-1]]
        exp[-2:] = [exp[-2] + exp[-1]]
    return outside, float(stats.chisquare(obs, exp).pvalue)


def todays_chain(llm: Any, params: SamplingParams, grammar: Any, candidates: Any) -> Any:
    """The chain the embedded model sampled with before the one law: llama-cpp-python's
    completion chain (top-k 40, typical 1, top-p, min-p 0.05, then the temperature)."""
    from llama_cpp import _internals

    sampler = _internals.LlamaSampler()
    if candidates is not None:
        sampler.add_custom(IntegerCandidates(candidates))
    sampler.add_grammar(llm._model, grammar)
    sampler.add_top_k(40)
    sampler.add_typical(1.0, 1)
    sampler.add_top_p(params.top_p, 1)
    sampler.add_min_p(0.05, 1)
    sampler.add_temp(params.temperature)
    sampler.add_dist(llm._seed)
    return sampler


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=0.7, top_p=0.95, max_tokens=4),
        SamplingParams(temperature=1.2, top_p=0.9, top_k=6, min_p=0.02, max_tokens=4),
    ],
    ids=["defaults", "every-setting"],
)
def test_server_and_workbench_sampling_draw_from_one_law(
    embedded_model, per_agent_model, params: SamplingParams
) -> None:
    expected = expected_answers(embedded_model, REQUEST, params, canonical=True)
    assert sum(expected.values()) == pytest.approx(1.0)
    assert len(expected) >= 4  # a spread to test, not one sure answer
    server = per_agent_answers(per_agent_model, params)
    drawn = drawn_answers(embedded_model, params)
    for name, observed in (("sampling: server", server), ("sampling: workbench", drawn)):
        outside, p = fit(observed, expected)
        assert outside == 0, f"{name}: {outside} of {N} answers outside the law's support"
        assert p > 1e-4, f"{name}: answers do not fit the law (p = {p:.2g}): {observed}"
    answers = sorted(set(server) | set(drawn))
    table = np.array([[server.get(a, 0) for a in answers], [drawn.get(a, 0) for a in answers]])
    table = table[:, table.sum(axis=0) >= 10]  # cells too thin for the test stay out
    assert stats.chi2_contingency(table).pvalue > 1e-4  # the two paths: one distribution


def test_the_old_chain_fails_the_law(
    embedded_model, per_agent_model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same check rejects llama-cpp-python's own chain at the config's defaults: it draws
    answers the law never gives (its top-p is taken at temperature 1, before the temperature
    sharpens the distribution)."""
    params = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=4)
    expected = expected_answers(embedded_model, REQUEST, params, canonical=True)
    monkeypatch.setattr(llamacpp, "answer_sampler", todays_chain)
    old = per_agent_answers(per_agent_model, params)
    outside, p = fit(old, expected)
    print(f"old chain: {outside} of {N} answers outside the law, p = {p:.2g}")
    assert outside > 0 and p < 1e-4, (outside, p, old)


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=0.7, top_p=0.95, max_tokens=4),
        SamplingParams(temperature=1.2, top_p=0.9, top_k=6, min_p=0.02, max_tokens=4),
        SamplingParams(temperature=1.0, top_p=1.0, top_k=0, max_tokens=4),
    ],
    ids=["defaults", "every-setting", "every-answer"],
)
def test_the_exact_answer_distribution_is_the_laws(embedded_model, params) -> None:
    """`distribution.whole_walk.answer_walk`'s answers (what estimates and exact group distributions
    read) equals the law written out with loops over the engine's own evaluation, and with
    nothing cut off its walk scores every node `full_trie_nodes` counts."""
    import asyncio

    from workbench.llm.distribution.whole_walk import answer_walk, full_trie_nodes

    scorer = embedded_model.node_scorer()
    vocab = scorer._vocabulary(0, 100)
    (prompt,) = asyncio.run(scorer.prompt_tokens([REQUEST]))
    scored: list[int] = []

    class Counting:
        async def score(self, nodes):
            scored.append(len(nodes))
            return await scorer.score(nodes)

    walked = asyncio.run(answer_walk(Counting(), prompt, vocab, params))  # type: ignore[arg-type]
    exact = walked.answers
    expected = expected_answers(embedded_model, REQUEST, params, canonical=True)
    assert set(exact) == set(expected)
    for answer, p in expected.items():
        assert exact[answer] == pytest.approx(p, rel=1e-9, abs=1e-12), answer
    assert sum(exact.values()) == pytest.approx(1.0)
    nodes, depth = full_trie_nodes(vocab, params)
    assert depth <= params.max_tokens and sum(scored) <= nodes
    if params.top_k == 0 and params.top_p == 1.0:
        assert sum(scored) == nodes and len(exact) == 101  # every answer 0-100 has mass
