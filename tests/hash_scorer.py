"""Node scorers whose logits are a fixed function of the node (a hash of prompt, prefix and
token), one on each base's schedule: the smallest `NodeScorer`s, what the tests of the walk
(tests/llm/distribution/test_walk.py) and of the cache's scorer (test_cached.py) drive."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, OutputConstraint
from workbench.llm.distribution.scorer import ConcurrentScorer, Node, TurnTakingScorer
from workbench.llm.distribution.vocabulary import IntegerVocabulary

DIGITS = tuple((100 + d, str(d)) for d in range(10)) + ((120, "-"), (130, "10"))
END = (2,)


class HashLogits:
    """Logits a pure function of (prompt, prefix, token): a model whose answers depend on the
    prompt and the tokens so far, nothing else (`fail_prompt`'s nodes fail, as a server's
    HTTP 500)."""

    def __init__(self, fail_prompt: str | None = None, window: int = 1) -> None:
        self.fail_prompt = fail_prompt
        self.window = window
        self.scored: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self.calls = 0

    def describe(self) -> dict[str, str]:
        return {"nodes": "hash"}

    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        return IntegerVocabulary(DIGITS, END, low, high)

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        return [tuple(r.messages[0]["content"].encode()) for r in requests]

    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        self.calls += 1
        out = []
        for node in nodes:
            if self.fail_prompt is not None and bytes(node.prompt).decode() == self.fail_prompt:
                raise ModelError("HTTP 500 from the server")
            self.scored.append((node.prompt, node.prefix))
            out.append(logits(node))
        return out


class HashScorer(HashLogits, TurnTakingScorer):
    """Hash logits on an engine's schedule: shards take turns, one call scores a step."""


class ServedHashScorer(HashLogits, ConcurrentScorer):
    """Hash logits on a server's schedule: every walk of a step scored by a call of its own."""


SCHEDULES: dict[str, type[HashScorer] | type[ServedHashScorer]] = {
    "engine": HashScorer,
    "server": ServedHashScorer,
}
"""The two bases' schedules over the same logits."""


def logits(node: Node) -> np.ndarray:
    """A node's logits: for each allowed token, a hash of (prompt, prefix, token) in [0, 4)."""
    values = []
    for token in node.allowed.tolist():
        digest = hashlib.sha256(repr((node.prompt, node.prefix, token)).encode()).digest()
        values.append(int.from_bytes(digest[:4], "little") / 2**32 * 4)
    return np.array(values)


def request(text: str, low: int = 0, high: int = 100) -> ChatRequest:
    """A one-message request for an integer in [low, high]."""
    return ChatRequest(
        ({"role": "user", "content": text},),
        constraint=OutputConstraint(integer_range=(low, high)),
    )
