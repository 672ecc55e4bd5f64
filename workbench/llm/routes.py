"""Which engine walks a prompt: a prompt's identity (`prompt_key`) and a round's `Routes`.

Where a run has several engines (model actors on Ray, several endpoints), a round's plan
(`runtime.cluster_plan.plan_round`) gives each distinct prompt of the round to exactly one of
them. A shard holds only its own prompts' part of the plan; a prompt the plan never saw (the
paper's extraction ask, made from an answer) goes to an engine chosen by its key alone, so every
shard sends it to the same one. Answers do not depend on the route: a node's logits are the same
on every engine of one build.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from workbench.llm.base import ChatRequest

T = TypeVar("T")


def prompt_key(messages: Sequence[Mapping[str, Any]], model: str | None = None) -> str:
    """A prompt's identity: a stable hash of its chat messages and the model asked (the same on
    every shard, in every process)."""
    text = json.dumps([list(messages), model], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def request_key(request: ChatRequest) -> str:
    """`prompt_key` of a chat request."""
    return prompt_key(request.messages, request.model)


@dataclass(frozen=True)
class Routes:
    """A shard's part of a round's plan: the engine of each of its prompts by key (`planned`);
    any other prompt goes to the one of `engines` (the engine numbers in use) its key's hash
    picks."""

    engines: tuple[int, ...]
    planned: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.engines:
            raise ValueError("Routes need at least one engine")

    def engine_of(self, request: ChatRequest) -> int:
        """The engine that walks `request`'s prompt."""
        key = request_key(request)
        planned = self.planned.get(key)
        if planned is not None:
            return planned
        return self.engines[int(key[:8], 16) % len(self.engines)]

    def split(self, requests: Sequence[ChatRequest]) -> dict[int, list[int]]:
        """The positions of `requests` each engine walks, in order (engines ascending)."""
        out: dict[int, list[int]] = {}
        for i, request in enumerate(requests):
            out.setdefault(self.engine_of(request), []).append(i)
        return dict(sorted(out.items()))


def in_input_order(n: int, positions: Iterable[list[int]], batches: Sequence[list[T]]) -> list[T]:
    """Batches of results (one per part of a split, e.g. `Routes.split`'s) put back at their
    positions in the input of `n`."""
    results: list[T | None] = [None] * n
    for idx, batch in zip(positions, batches, strict=True):
        for i, result in zip(idx, batch, strict=True):
            results[i] = result
    return results  # type: ignore[return-value]
