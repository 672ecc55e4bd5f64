"""What a model gives distribution mode (`NodeScorer`): its vocabulary, its prompts' tokens
and the logits of answer-trie nodes (`Node`), and how its walks are scheduled, which the scorer
owns so that no caller asks what kind of scorer it has."""

from __future__ import annotations

import asyncio
import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
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


class NodeScorer(ABC):
    """What a model provides for distribution mode: its integer vocabulary, its prompts' tokens
    and its nodes' logits, and how its walks are scheduled, which it owns so that no caller
    asks what kind of scorer it has: how many groups walk in step (`window`), whether new
    walks may start now (`accepting`), whether shards take turns at it (`turn`), and how one
    step's nodes of many walks are scored with a failure kept to its own walk (`score_walks`).
    """

    concurrent: bool = False
    """True: many shards' walks may share the scorer at once (a server); False: the shards of
    one event loop take turns (`turn`: an engine in this process, whose cache holds one prompt,
    would otherwise evaluate each other's prompts again at every depth)."""
    window: int = 1
    """Groups walked in step: each step's nodes of them all go to `score_walks` together."""

    def accepting(self) -> bool:
        """Whether new walks may start now (the walks in flight always finish)."""
        return True

    def turn(self) -> AbstractAsyncContextManager[object]:
        """Held while one shard's groups walk: this loop's lock for a scorer that is not
        `concurrent`, nothing for one that is."""
        if self.concurrent:
            return nullcontext()
        loop = asyncio.get_running_loop()
        locks = self.__dict__.get("_turns")
        if locks is None:  # subclasses need not call a base __init__
            locks = self.__dict__["_turns"] = weakref.WeakKeyDictionary()
        return locks.setdefault(loop, asyncio.Lock())

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

    async def score_walks(
        self, walks: Sequence[Sequence[Node]]
    ) -> list[list[np.ndarray] | BaseException]:
        """Each walk's nodes of one step scored: their logits, or the failure that is that
        walk's alone. A `concurrent` scorer (a server) is asked for every walk at once (it
        batches what arrives together); any other gets one call for them all (an engine batches
        their rows), asked again walk by walk when it fails."""
        if self.concurrent:
            return list(await asyncio.gather(*(self._score_or_failure(w) for w in walks)))
        try:
            scores = await self.score([node for nodes in walks for node in nodes])
        except FAILURES:
            return [await self._score_or_failure(nodes) for nodes in walks]
        out: list[list[np.ndarray] | BaseException] = []
        at = 0
        for nodes in walks:
            out.append(scores[at : at + len(nodes)])
            at += len(nodes)
        return out

    async def _score_or_failure(self, nodes: Sequence[Node]) -> list[np.ndarray] | BaseException:
        """One walk's nodes scored, or the failure that stopped them."""
        try:
            return await self.score(nodes)
        except FAILURES as exc:
            return exc
