"""Answer-trie nodes in the node slots of the real embedded engine: batched answer rows,
dropped states and full arenas give the very logits of each node evaluated alone."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.llm.base import ChatRequest
from workbench.llm.embedded.engine import chat_tokens
from workbench.llm.embedded.node_slots import NodeSlots, self_check


@pytest.fixture(scope="module")
def scorer(embedded_model):
    return embedded_model.node_scorer()


def prompts(scorer, n: int) -> list[tuple[int, ...]]:
    """`n` chat prompts sharing their first lines, each with its own last line."""
    engine = scorer.model.engine
    out = []
    for i in range(n):
        text = f"Guess a whole number from 0 to 100.\nYour own numbers so far: {i * 7 % 101}, {i}."
        request = ChatRequest(({"role": "user", "content": text},))
        out.append(tuple(chat_tokens(engine.llm, engine.formatter, request)[0]))
    return out


def keys_of(prompts: list[tuple[int, ...]], digits: list[int]) -> list:
    """Each prompt's root, three children and two grandchildren (a trie's first depths)."""
    keys = []
    for p in prompts:
        keys += [
            (p, ()),
            *((p, (d,)) for d in digits[:3]),
            *((p, (digits[0], d)) for d in digits[3:5]),
        ]
    return keys


def alone(scorer, keys) -> list[np.ndarray]:
    engine = scorer.model.engine
    with engine.lock:
        out = [scorer._alone(engine, key).copy() for key in keys]
        engine.forget()
    return out


def test_drops_and_full_arenas_change_no_logit(scorer) -> None:
    """Eight sequences for 30 prompts' tries (states dropped all the time) and an arena of
    2,048 cells (cleared several times): every node's logits are bitwise those alone. Before
    dropped states' cells were kept written, a new cell landed in a freed hole before its own
    prompt's cells and the logits differed."""
    engine = scorer.model.engine
    digits = [int(t) for t in engine.integer_tokens()[:5]]
    ps = prompts(scorer, 30)
    keys = keys_of(ps, digits)
    expected = alone(scorer, keys)
    slots = NodeSlots(engine.llm, engine.cuts_after, cells=2048, sequences=8)
    try:
        with engine.lock:
            slots.set_threads(1)
            # depth by depth, ten prompts at a time, as the walks ask
            got = {}
            for start in range(0, len(ps), 10):
                window = set(ps[start : start + 10])
                for depth in range(3):
                    ask = [k for k in keys if k[0] in window and len(k[1]) == depth]
                    got.update(zip(ask, slots.logits(ask), strict=True))
        assert slots.clears >= 1
        for key, want in zip(keys, expected, strict=True):
            assert np.array_equal(got[key], want), key
    finally:
        slots.close()


def test_answer_rows_share_decodes(scorer) -> None:
    """The rows of many prompts' children go into one decode (`rows` at a time)."""
    engine = scorer.model.engine
    digits = [int(t) for t in engine.integer_tokens()[:5]]
    ps = prompts(scorer, 12)
    slots = NodeSlots(engine.llm, engine.cuts_after)
    try:
        with engine.lock:
            slots.set_threads(1)
            slots.logits([(p, ()) for p in ps])
            before = slots.decodes
            children = [(p, (d,)) for p in ps for d in digits[:3]]
            got = slots.logits(children)
        assert slots.decodes - before == 2  # 36 rows, 32 to a decode
        assert slots.rows_decoded == 36
        assert all(np.array_equal(a, b) for a, b in zip(got, alone(scorer, children), strict=True))
    finally:
        slots.close()


def test_self_check_passes_here_and_catches_a_difference(scorer) -> None:
    engine = scorer.model.engine
    digits = [int(t) for t in engine.integer_tokens()[:6]]
    (prompt,) = prompts(scorer, 1)
    slots = NodeSlots(engine.llm, engine.cuts_after)
    try:
        with engine.lock:
            slots.set_threads(1)
            note = self_check(slots, lambda key: scorer._alone(engine, key).copy(), prompt, digits)
            assert slots.rows == 32 and "32 row(s) per decode: bitwise equal" in note

            def off_by_a_little(key):
                return scorer._alone(engine, key) + (1e-6 if key[1] else 0.0)

            note = self_check(slots, off_by_a_little, prompt, digits)
            engine.forget()
        assert slots.rows == 0 and "every node evaluated alone" in note
    finally:
        slots.close()


@pytest.mark.parametrize("slots", ["batched", "alone"])
def test_nodes_out_of_order_come_back_in_order(embedded_model, monkeypatch, slots: str) -> None:
    """A scorer given nodes in no particular order answers each node with its own logits, with
    the node slots and on the plain path (where a self-check found the slots inexact)."""
    from workbench.llm.distribution.embedded_scorer import EmbeddedNodeScorer
    from workbench.llm.distribution.scorer import Node

    engine = embedded_model.engine
    if slots == "alone":
        monkeypatch.setattr(engine, "slots", False)
    scorer = EmbeddedNodeScorer(embedded_model)  # an empty memo
    allowed = engine.integer_tokens()[:6]
    digits = [int(t) for t in allowed[:5]]
    keys = keys_of(prompts(scorer, 4), digits)[::-1]  # reverse prompt order, children first
    got = scorer.score_sync([Node(p, x, allowed) for p, x in keys])
    for key, mine, full in zip(keys, got, alone(scorer, keys), strict=True):
        assert np.array_equal(mine, full[allowed].astype(np.float64)), key
