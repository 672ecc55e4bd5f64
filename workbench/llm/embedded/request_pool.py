"""One queue for every batch that waits for an in-process engine, answered in one sorted order.

Shard actors on a Ray node share the node's one embedded engine, and the local backend's shards
share one model: their batches arrive together at the start of a round. Answered batch after
batch, each sorted on its own, the shared pieces of their prompts (a persona line, a label) were
evaluated once per batch, and the same prompt in two batches twice: two shards took 1.2 times
one shard's round. Here every waiting request goes into one pool ordered by its messages, and
whoever holds the engine answers the pool's first request next, whichever batch it came from,
until its own batch is answered. The answers do not depend on the order (canonical prompt
pieces), only the reuse does.
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.llm.base import ChatRequest, ChatResult, SamplingParams, report_answered

Complete = Callable[[ChatRequest, SamplingParams], ChatResult]


@dataclass
class _Batch:
    """One caller's batch: its requests, how to answer them (the caller's model: its counters,
    its settings), their results so far, and the caller's context (its progress tracker, which
    each answer is reported to)."""

    requests: Sequence[ChatRequest]
    complete: Complete
    results: list[ChatResult | None]
    remaining: int
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    error: BaseException | None = None


def message_order(request: ChatRequest) -> list[tuple[str, str]]:
    """The order that puts requests sharing the longest prefixes next to each other."""
    return [(m["role"], m["content"]) for m in request.messages]


class RequestPool:
    """Waiting requests of every batch for one engine (whose lock is `engine_lock`)."""

    def __init__(self, engine_lock: threading.Lock) -> None:
        self.engine_lock = engine_lock
        self._lock = threading.Lock()
        self._heap: list[tuple[Any, int, _Batch, int, SamplingParams]] = []
        self._arrival = itertools.count()

    def answer(
        self,
        requests: Sequence[ChatRequest],
        params: SamplingParams,
        complete: Complete,
        *,
        sort: bool = True,
    ) -> list[ChatResult]:
        """Blocking: the batch's results in input order. Sorted, requests of all waiting
        batches are answered in message order; unsorted, in the order they arrived."""
        batch = _Batch(requests, complete, [None] * len(requests), len(requests))
        with self._lock:
            for i, request in enumerate(requests):
                key = message_order(request) if sort else []
                heapq.heappush(self._heap, (key, next(self._arrival), batch, i, params))
        with self.engine_lock:
            while batch.remaining:
                with self._lock:
                    _, _, owner, i, wanted = heapq.heappop(self._heap)
                try:
                    result = owner.complete(owner.requests[i], wanted)
                except Exception as exc:  # raised to its own caller, never lost in another's
                    owner.error = owner.error or exc
                    result = ChatResult(text=None, error=str(exc), error_kind="model_error")
                owner.results[i] = result
                owner.remaining -= 1
                owner.context.run(report_answered, owner.requests[i], result)
        if batch.error is not None:
            raise batch.error
        return batch.results  # type: ignore[return-value]
