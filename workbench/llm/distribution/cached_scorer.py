"""Distribution mode from the response cache: a node scored in an earlier run of the same model
is read back, not scored again (`llm.cache` keeps the file)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import numpy as np

from workbench.llm.base import ChatRequest
from workbench.llm.distribution.scorer import Node, NodeScorer, ScoreNodes, WalkScores
from workbench.llm.distribution.vocabulary import IntegerVocabulary


class LogitStore(Protocol):
    """Where node logits are kept by key (`llm.cache.ResponseCache`)."""

    def get_logits(self, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_logits(self, rows: Sequence[tuple[str, np.ndarray]]) -> None: ...


class CachedScorer(NodeScorer):
    """A node scorer whose nodes' logits come from the cache file where present: a rerun of a
    distribution-mode round scores no node again. It schedules as the scorer it wraps: its
    window, turns and steps are the wrapped scorer's, scoring through this one's `score`."""

    def __init__(
        self,
        inner: NodeScorer,
        cache: LogitStore,
        identity: dict[str, Any],
        count: Callable[[int], None],
    ) -> None:
        self.inner = inner
        self.count = count
        self.cache = cache
        self._salt = json.dumps(
            {"model": identity, "nodes": inner.describe()}, sort_keys=True, default=str
        )

    @property
    def window(self) -> int:  # type: ignore[override]
        """The wrapped scorer's window."""
        return self.inner.window

    @property
    def memo_hits(self) -> int:
        """The wrapped scorer's memo hits (nodes read from the cache file are counted by the
        cache, `count`)."""
        return self.inner.memo_hits

    def accepting(self) -> bool:
        """Whether the wrapped scorer takes new walks now."""
        return self.inner.accepting()

    def turn(self) -> AbstractAsyncContextManager[object]:
        """The wrapped scorer's turns (the engine behind it is the same)."""
        return self.inner.turn()

    async def score_walks_with(
        self, walks: Sequence[Sequence[Node]], score: ScoreNodes
    ) -> list[WalkScores]:
        """A step scheduled as the wrapped scorer schedules its own."""
        return await self.inner.score_walks_with(walks, score)

    def describe(self) -> dict[str, Any]:
        """The wrapped scorer's description."""
        return self.inner.describe()

    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The wrapped scorer's vocabulary."""
        return await self.inner.vocabulary(low, high)

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """The wrapped scorer's prompt tokens."""
        return await self.inner.prompt_tokens(requests)

    def key(self, node: Node) -> str:
        """sha256 over the model, how nodes are computed, and the node itself."""
        text = json.dumps([self._salt, node.prompt, node.prefix, node.allowed.tolist()])
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """Cached logits where present; the wrapped scorer for the rest (then stored)."""
        keys = [self.key(node) for node in nodes]
        found = self.cache.get_logits(keys)
        misses = [i for i, key in enumerate(keys) if key not in found]
        if misses:
            self.count(len(misses))
            fresh = await self.inner.score([nodes[i] for i in misses])
            self.cache.put_logits(
                [(keys[i], logits) for i, logits in zip(misses, fresh, strict=True)]
            )
            found.update(
                {
                    keys[i]: np.asarray(v, dtype=np.float64)
                    for i, v in zip(misses, fresh, strict=True)
                }
            )
        return [found[key] for key in keys]
