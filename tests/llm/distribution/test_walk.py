"""The answer trie with a scorer whose logits are a fixed function of the node: every agent's
answer is the one it draws alone, nodes are the distinct prefixes, failures stay in their group.
(The real engine's trie is checked in tests/agents/test_distribution_exact.py.)"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hash_scorer import DIGITS, END, SCHEDULES, HashScorer, logits, request

from workbench.agents import streams
from workbench.llm.base import SamplingParams
from workbench.llm.distribution.sampler import draw
from workbench.llm.distribution.scorer import (
    ConcurrentScorer,
    Node,
    NodeScorer,
    TurnTakingScorer,
)
from workbench.llm.distribution.vocabulary import IntegerVocabulary, complete_integer
from workbench.llm.distribution.walk import STEP_STREAM, PromptGroup, TrieCounts, draw_answers


def alone(prompt: str, agent: int, params: SamplingParams, low: int, high: int) -> str:
    """One agent's answer walked by hand, one token at a time."""
    vocab = IntegerVocabulary(DIGITS, END, low, high)
    tokens, prefix, text = tuple(prompt.encode()), (), ""
    for depth in range(params.max_tokens):
        if text and not vocab.can_continue(text):
            break
        allowed = vocab.allowed(text)
        u = streams.uniform(5, np.array([agent]), 2, STEP_STREAM + depth)
        token = int(allowed[draw(logits(Node(tokens, prefix, allowed)), params, u)[0]])
        if token in END:
            break
        prefix, text = (*prefix, token), text + vocab.piece(token)
    return text


def uniforms(ids: np.ndarray, depth: int) -> np.ndarray:
    return streams.uniform(5, ids, 2, STEP_STREAM + depth)


@pytest.mark.parametrize(
    ("schedule", "window"), [("engine", 1), ("engine", 2), ("engine", 64), ("server", 1)]
)
@pytest.mark.parametrize(("low", "high"), [(0, 100), (-20, 35)])
def test_every_agent_draws_what_it_draws_alone(
    schedule: str, window: int, low: int, high: int
) -> None:
    """Alone, two walks in step (a window refilled as walks finish) or all of them."""
    params = SamplingParams(temperature=1.3, top_p=0.98, max_tokens=5)
    prompts = ["persona a", "persona b", "persona c"]
    rng = np.random.default_rng(0)
    ids = rng.permutation(3000).astype(np.int64)
    groups = [PromptGroup(request(p, low, high), ids[i::3]) for i, p in enumerate(prompts)]
    scorer = SCHEDULES[schedule](window=window)
    counts = TrieCounts()
    answers = asyncio.run(draw_answers(scorer, groups, params, uniforms, counts))
    drawn_texts = set()
    for prompt, group, answer in zip(prompts, groups, answers, strict=True):
        assert answer.error is None
        for agent, leaf in zip(group.agent_ids.tolist(), answer.leaf.tolist(), strict=True):
            text = answer.texts[leaf]
            assert text == alone(prompt, agent, params, low, high)
            assert complete_integer(text, low, high)
            drawn_texts.add(text)
    assert len(drawn_texts) > 20  # the agents really spread over many answers
    # one score per distinct node, never per agent
    assert len(scorer.scored) == len(set(scorer.scored)) == counts.nodes < counts.draws
    assert counts.answers == 3000 and counts.prompts == 3


def test_greedy_needs_one_path_per_prompt() -> None:
    params = SamplingParams(temperature=0, max_tokens=4)
    group = PromptGroup(request("x"), np.arange(500, dtype=np.int64))
    scorer = HashScorer()
    (answer,) = asyncio.run(draw_answers(scorer, [group], params, uniforms))
    assert len(answer.texts) == 1 and (answer.leaf == 0).all()
    assert len(scorer.scored) == len(answer.texts[0]) + 1 - (not scorer_can_end(answer.texts[0]))


def scorer_can_end(text: str) -> bool:
    """Whether the answer's last node was scored (it can continue) or only the end followed."""
    return IntegerVocabulary(DIGITS, END, 0, 100).can_continue(text)


@pytest.mark.parametrize(("schedule", "window"), [("server", 1), ("engine", 1), ("engine", 8)])
def test_a_failing_group_fails_alone(schedule: str, window: int) -> None:
    """A failure is its own group's, also when its nodes were scored with other walks'."""
    params = SamplingParams()
    groups = [PromptGroup(request(p), np.arange(i * 10, i * 10 + 10)) for i, p in enumerate("abc")]
    scorer = SCHEDULES[schedule](fail_prompt="b", window=window)
    answers = asyncio.run(draw_answers(scorer, groups, params, uniforms))
    assert answers[1].error is not None and "HTTP 500" in answers[1].error
    for ok in (answers[0], answers[2]):
        assert ok.error is None and len(ok.leaf) == 10


def test_walks_in_step_share_score_calls() -> None:
    """With a window, one call scores a depth of many groups: calls follow depths, not groups."""
    params = SamplingParams(temperature=1.0, max_tokens=4)
    groups = [PromptGroup(request(f"p{i}"), np.arange(i * 50, i * 50 + 50)) for i in range(20)]
    one, many = HashScorer(), HashScorer(window=64)
    alone_answers = asyncio.run(draw_answers(one, groups, params, uniforms))
    together = asyncio.run(draw_answers(many, groups, params, uniforms))
    for a, b in zip(alone_answers, together, strict=True):
        assert [a.texts[i] for i in a.leaf] == [b.texts[i] for i in b.leaf]
    assert many.calls <= params.max_tokens < 20 <= one.calls
    assert sorted(one.scored) == sorted(many.scored)


def test_max_tokens_cuts_the_answer() -> None:
    params = SamplingParams(temperature=2.0, top_p=1.0, max_tokens=1)
    group = PromptGroup(request("x", -99, 99), np.arange(2000, dtype=np.int64))
    (answer,) = asyncio.run(draw_answers(HashScorer(), [group], params, uniforms))
    assert max(answer.tokens) == 1
    assert "-" in answer.texts  # cut before its digits: an answer that does not parse


def test_allowed_tokens_follow_the_range() -> None:
    vocab = IntegerVocabulary(DIGITS, END, 0, 100)
    pieces = dict(DIGITS)
    assert [pieces[t] for t in vocab.allowed("").tolist()] == [*"0123456789", "10"]
    assert [pieces.get(t, "end") for t in vocab.allowed("1").tolist()] == ["end", *"0123456789"]
    assert [pieces.get(t, "end") for t in vocab.allowed("10").tolist()] == ["end", "0"]
    assert vocab.allowed("0").tolist() == list(END)  # no leading zeros
    assert not vocab.can_continue("100") and not vocab.can_continue("0")


def test_every_scorer_schedules_through_its_base_class() -> None:
    """The engine's scorer takes turns, the server's is concurrent, the cache's hands its
    schedule to the scorer it wraps; no scorer carries a flag that switches its schedule, and
    no caller probes a scorer for what it can do."""
    from pathlib import Path

    import workbench
    from workbench.llm.distribution.cached_scorer import CachedScorer
    from workbench.llm.distribution.embedded_scorer import EmbeddedNodeScorer
    from workbench.llm.distribution.served_scorer import ServedNodeScorer

    assert issubclass(EmbeddedNodeScorer, TurnTakingScorer)
    assert issubclass(ServedNodeScorer, ConcurrentScorer)
    assert issubclass(CachedScorer, NodeScorer)
    assert not issubclass(CachedScorer, TurnTakingScorer | ConcurrentScorer)
    for kind in (EmbeddedNodeScorer, ServedNodeScorer, CachedScorer):
        assert not hasattr(kind, "concurrent")
    probes = [
        f"{path.name}:{n}"
        for path in Path(workbench.__file__).parent.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "getattr(scorer" in line or "getattr(self.inner" in line or "inner.concurrent" in line
    ]
    assert probes == []
