"""Batches waiting for one engine are answered together in message order, each caller getting
its own results in input order and its own progress reports."""

from __future__ import annotations

import threading
import time

from workbench.llm.base import (
    BatchProgress,
    ChatRequest,
    ChatResult,
    SamplingParams,
    track_progress,
)
from workbench.llm.embedded.request_pool import RequestPool

PARAMS = SamplingParams()


def request(text: str) -> ChatRequest:
    return ChatRequest(messages=({"role": "user", "content": text},))


def test_waiting_batches_are_answered_in_one_sorted_order() -> None:
    lock = threading.Lock()
    pool = RequestPool(lock)
    answered: list[str] = []

    def complete(req: ChatRequest, params: SamplingParams) -> ChatResult:
        answered.append(req.messages[0]["content"])
        return ChatResult(text=req.messages[0]["content"].upper())

    results: dict[str, list[ChatResult]] = {}
    progress = {"a": BatchProgress(), "b": BatchProgress()}

    def caller(name: str, texts: list[str]) -> None:
        with track_progress(progress[name]):
            results[name] = pool.answer([request(t) for t in texts], PARAMS, complete)

    with lock:  # the engine is busy: both batches wait, then go as one
        threads = [
            threading.Thread(target=caller, args=("a", ["d", "b", "f"])),
            threading.Thread(target=caller, args=("b", ["c", "a", "e"])),
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
    for thread in threads:
        thread.join(10)
    assert [r.text for r in results["a"]] == ["D", "B", "F"]  # each in its own input order
    assert [r.text for r in results["b"]] == ["C", "A", "E"]
    # one order over both batches (each batch sorted on its own would give b d f a c e)
    assert answered == ["a", "b", "c", "d", "e", "f"]
    assert progress["a"].answered == 3 and progress["b"].answered == 3  # reported to the owner


def test_a_failure_is_raised_to_the_caller_whose_request_failed() -> None:
    lock = threading.Lock()
    pool = RequestPool(lock)

    def complete(req: ChatRequest, params: SamplingParams) -> ChatResult:
        if req.messages[0]["content"] == "bad":
            raise ValueError("unsupported constraint")
        return ChatResult(text="ok")

    outcome: dict[str, object] = {}

    def caller(name: str, texts: list[str]) -> None:
        try:
            outcome[name] = pool.answer([request(t) for t in texts], PARAMS, complete)
        except ValueError as exc:
            outcome[name] = exc

    with lock:
        threads = [
            threading.Thread(target=caller, args=("good", ["z"])),
            threading.Thread(target=caller, args=("bad", ["bad", "a"])),
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
    for thread in threads:
        thread.join(10)
    assert [r.text for r in outcome["good"]] == ["ok"]  # answered, never stuck
    assert isinstance(outcome["bad"], ValueError)
