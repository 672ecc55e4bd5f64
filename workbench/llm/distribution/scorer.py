"""What a model gives distribution mode (`NodeScorer`): its vocabulary, its prompts' tokens
and the logits of answer-trie nodes (`Node`), and how one step of many walks is scheduled.

Two small bases say how, as httpx's `BaseTransport` and `AsyncBaseTransport` do for a transport:
`TurnTakingScorer`, an engine in this process that the shards of an event loop take turns at
and that scores one step's nodes of every walk in one call; and `ConcurrentScorer`, a server
that every shard's walks share at once, each walk scored by its own call. A scorer is one or
the other by its class, so no caller asks what kind of scorer it has, and a wrapper (the cache,
`cached_scorer`) hands the scheduling to the scorer it wraps (`score_walks_with`)."""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest
from workbench.llm.distribution.sampler import SAMPLER_VERSION
from workbench.llm.distribution.vocabulary import IntegerVocabulary

FAILURES = (ModelError, ValueError, RuntimeError, OSError)
"""What a failing model raises: the group whose walk it stops fails, never the others."""


@dataclass(frozen=True)
class Node:
    """One trie node to score: the prompt's tokens, the answer tokens drawn so far, and the
    tokens allowed next (ascending); its score is their logits, in that order."""

    prompt: tuple[int, ...]
    prefix: tuple[int, ...]
    allowed: np.ndarray


ScoreNodes = Callable[[Sequence[Node]], Awaitable[list[np.ndarray]]]
"""A node scorer's `score`: the logits of each node's allowed tokens."""
WalkScores = list[np.ndarray] | BaseException
"""One walk's nodes of one step scored: their logits, or the failure that is that walk's alone."""


class NodeScorer(ABC):
    """What distribution mode asks of a model: the contract `walk.draw_answers` (the one driver)
    and `whole_walk.answer_walk` hold every model to.

    A scorer knows its model's integer answers (`vocabulary`), how the model sees a prompt
    (`prompt_tokens`) and the logits a node's allowed tokens have there (`score`), and says
    how it computes them (`describe`, recorded in the manifest and part of cache keys). It also
    owns how its walks are scheduled, so that no caller asks what kind of scorer it has: how
    many groups walk in step (`window`), whether new walks may start now (`accepting`),
    whether shards take turns at it (`turn`), and how one step's nodes of many walks are
    scored with a failure kept to its own walk (`score_walks`).

    A model's scorer subclasses one of the two bases, which fill in `turn` and
    `score_walks_with`: `TurnTakingScorer` (an engine in this process: llama.cpp, whose
    context holds one prompt) or `ConcurrentScorer` (a server, or vLLM in this process, which
    batches what arrives together). A wrapper subclasses `NodeScorer` itself and hands both to
    the scorer it wraps, as the response cache's `cached_scorer.CachedScorer` does.

    The smallest scorer is the test suite's (`HashScorer` in tests/hash_scorer.py): logits a
    fixed function of the node, the same whoever asks and however the nodes are batched. In
    short::

        class HashScorer(TurnTakingScorer):
            def describe(self):
                return {"nodes": "hash"}

            async def vocabulary(self, low, high):
                return IntegerVocabulary(DIGITS, END, low, high)  # token ids and their texts

            async def prompt_tokens(self, requests):
                return [tuple(r.messages[0]["content"].encode()) for r in requests]

            async def score(self, nodes):
                return [logits(node) for node in nodes]  # a hash of (prompt, prefix, token)

    and `await draw_answers(HashScorer(), groups, params, uniforms)` draws every group's
    answers through it (`walk`).
    """

    window: int = 1
    """Groups walked in step: each step's nodes of them all go to `score_walks` together."""

    @property
    def memo_hits(self) -> int:
        """Nodes asked for again and answered from what this scorer already holds, without
        scoring them (its memo); 0 for a scorer that holds nothing. What an engine's recorded
        work subtracts from its walks' nodes (`engine_work`)."""
        return 0

    def accepting(self) -> bool:
        """Whether new walks may start now (the walks in flight always finish)."""
        return True

    @abstractmethod
    def turn(self) -> AbstractAsyncContextManager[object]:
        """Held while one shard's groups walk (`ChatModel.draw_answers`)."""

    @abstractmethod
    async def score_walks_with(
        self, walks: Sequence[Sequence[Node]], score: ScoreNodes
    ) -> list[WalkScores]:
        """`score_walks`, the nodes scored by `score` (this scorer's own, or a wrapper's over
        it): how this scorer schedules one step of many walks."""

    async def score_walks(self, walks: Sequence[Sequence[Node]]) -> list[WalkScores]:
        """Each walk's nodes of one step scored: their logits, or the failure that is that
        walk's alone."""
        return await self.score_walks_with(walks, self.score)

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """How the node logits are computed (recorded in the manifest, part of cache keys)."""

    def sampling_identity(self) -> dict[str, Any]:
        """Distribution mode as the manifest records it: the workbench's sampler (its version)
        over node logits computed as `describe` says. Every model in this mode says it here."""
        return {"mode": "workbench", "sampler": SAMPLER_VERSION, **self.describe()}

    @abstractmethod
    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The tokens of integer answers in [low, high]."""

    @abstractmethod
    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """Each request's chat as the model sees it, ready for its answer."""

    @abstractmethod
    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """The logits of each node's allowed tokens (any additive constant per node)."""


class TurnTakingScorer(NodeScorer):
    """A scorer on an engine in this process that takes turns: the shards of one event loop
    walk one after another (its context holds one prompt, and shards walking at once would
    evaluate each other's prompts again at every depth), and one step's nodes of all its walks
    are scored in one call (the engine batches their rows)."""

    def turn(self) -> AbstractAsyncContextManager[object]:
        """This event loop's lock for this scorer."""
        loop = asyncio.get_running_loop()
        locks = self.__dict__.get("_turns")
        if locks is None:  # subclasses need not call a base __init__
            locks = self.__dict__["_turns"] = weakref.WeakKeyDictionary()
        return locks.setdefault(loop, asyncio.Lock())

    async def score_walks_with(
        self, walks: Sequence[Sequence[Node]], score: ScoreNodes
    ) -> list[WalkScores]:
        """One call for every walk's nodes; when it fails, each walk asked again alone, so a
        failure stays its own walk's."""
        try:
            scores = await score([node for nodes in walks for node in nodes])
        except FAILURES:
            return [await _score_or_failure(score, nodes) for nodes in walks]
        out: list[WalkScores] = []
        at = 0
        for nodes in walks:
            out.append(scores[at : at + len(nodes)])
            at += len(nodes)
        return out


class ConcurrentScorer(NodeScorer):
    """A scorer that many walks share at once, as a server is: no turns, and every walk's
    nodes of a step asked for by a call of their own, all at once (the server batches what
    arrives together), so that a failure is its own walk's."""

    def turn(self) -> AbstractAsyncContextManager[object]:
        """Nothing to wait for: the shards' walks share the scorer at once."""
        return nullcontext()

    async def score_walks_with(
        self, walks: Sequence[Sequence[Node]], score: ScoreNodes
    ) -> list[WalkScores]:
        """Every walk scored by its own call, concurrently."""
        return list(await asyncio.gather(*(_score_or_failure(score, nodes) for nodes in walks)))


async def _score_or_failure(score: ScoreNodes, nodes: Sequence[Node]) -> WalkScores:
    """One walk's nodes scored, or the failure that stopped them."""
    try:
        return await score(nodes)
    except FAILURES as exc:
        return exc
