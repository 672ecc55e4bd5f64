"""What a batch-first chat model is asked and answers: requests, sampling params, results.

`await model.generate(requests, params)` (`chat_model.ChatModel`) takes a list of `ChatRequest`s
(messages, per-request seed, optional output constraint), applies one `SamplingParams` to all of
them and returns one `ChatResult` per request in input order. Failures are results with `error`
set, never exceptions, so one bad request never loses the batch's other answers. A batch's
progress is reported as it goes (`track_progress`, `report_answered`, `report_drawn`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.config.sampling import SETTINGS, law

Message = dict[str, str]
ErrorKind = Literal["model_error", "timeout"]
Step = Literal["answer", "extract"]
"""Which step of an agent's decision a request is: its answer, or the paper's extraction call."""

EXTRACTED_MARKER = "\n[extracted: "
"""Joins an answer without a number and the extraction call's answer in a stored raw."""


def with_extraction(answer: str | None, extracted: str | None) -> str:
    """The stored raw of an answer whose number came from the extraction call."""
    return f"{answer}{EXTRACTED_MARKER}{extracted}]"


def split_extraction(raw: str) -> tuple[str, str | None]:
    """(answer, extracted text) of a `with_extraction` raw; (raw, None) for any other raw."""
    answer, marker, rest = raw.rpartition(EXTRACTED_MARKER)
    if not marker or not rest.endswith("]"):
        return raw, None
    return answer, rest[:-1]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings shared by every request of one batch: the one sampling law's
    (`config.sampling`: defaults, ranges, the order they apply in), which every path follows."""

    temperature: float = float(SETTINGS["temperature"].default)
    top_p: float = float(SETTINGS["top_p"].default)
    max_tokens: int = int(SETTINGS["max_tokens"].default)
    top_k: int = int(SETTINGS["top_k"].default)
    min_p: float = float(SETTINGS["min_p"].default)

    def __post_init__(self) -> None:
        for name, setting in SETTINGS.items():
            setting.check(name, getattr(self, name))

    @property
    def vllm_top_k(self) -> int:
        """`top_k` as vLLM takes it: -1 for off (every vLLM version accepts it; newer ones
        also take 0)."""
        return self.top_k or -1

    def describe(self) -> dict[str, Any]:
        """The law and these settings as plain data (the manifest, a model's identity)."""
        return law(dataclasses.asdict(self))


@dataclass(frozen=True)
class OutputConstraint:
    """What shape an answer must take; at most one of the fields may be set."""

    integer_range: tuple[int, int] | None = None
    regex: str | None = None
    json_schema: dict[str, Any] | None = None
    grammar: str | None = None  # GBNF (llama.cpp), e.g. to force begin/end tags

    def __post_init__(self) -> None:
        names = ("integer_range", "regex", "json_schema", "grammar")
        given = [n for n in names if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"OutputConstraint takes one constraint, got {', '.join(given)}.")
        if self.integer_range is not None:
            low, high = self.integer_range
            if low > high:
                raise ValueError(f"integer_range must have low <= high, got {self.integer_range}.")


@dataclass(frozen=True)
class ChatRequest:
    """One chat to complete: messages, a seed for reproducible sampling, an optional constraint."""

    messages: tuple[Message, ...]
    seed: int = 0
    constraint: OutputConstraint | None = None
    agent_id: int | None = None  # who asks, in which round: for replay, never sent to a model
    round: int | None = None
    model: str | None = None  # which named model of a mixed population answers
    step: Step = "answer"  # the answer or its extraction call: for replay, never sent to a model


@dataclass(frozen=True)
class Attempt:
    """One try of a request at a server: where, its HTTP status (None: no answer), the server's
    own error text or the client's, and how long it took."""

    endpoint: str
    status: int | None
    error: str | None
    latency_s: float

    def as_dict(self) -> dict[str, Any]:
        """The attempt as plain JSON values."""
        return {
            "endpoint": self.endpoint,
            "status": self.status,
            "error": self.error,
            "latency_s": round(self.latency_s, 6),
        }


@dataclass
class ChatResult:
    """One completion: text, token counts, latency, and an error kind + message on failure.

    `latency_s` is the whole request's (every attempt and the waits between them); `attempts`
    lists each try when a client retries (empty for in-process models), and `error` is the most
    informative of their errors (a server's 500 answer beats the refused connection after it).
    """

    text: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None
    error_kind: ErrorKind | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    attempts: tuple[Attempt, ...] = ()


def error_rank(message: str) -> int:
    """How much an error message tells about its cause, higher is more.

    A server's own answer (an HTTP status with its body) tells the most, then a timeout or a
    malformed answer, and a connection that failed (refused, reset) the least: it is what a
    client sees after a server has died, not why it died.
    """
    if "HTTP " in message:
        return 3
    lowered = message.lower()
    if any(word in lowered for word in ("connect", "remoteprotocolerror", "readerror")):
        return 1
    return 2


def most_informative(errors: Sequence[str | None]) -> str | None:
    """The first of the highest-ranked (`error_rank`) errors; None when there is none."""
    best: str | None = None
    for error in errors:
        if error is not None and (best is None or error_rank(error) > error_rank(best)):
            best = error
    return best


class BatchProgress:
    """How far a batch has got: answered requests, model failures by kind, tokens (any thread).

    Models report each request as its result is ready (`report_answered`); whoever tracks the
    batch (a shard playing a round) reads `snapshot()` while the batch is still going.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.answered = 0
        self.errors: dict[str, int] = {}
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def add(self, request: ChatRequest, result: ChatResult) -> None:
        """Count one finished request (the extraction step is the same agent: not counted)."""
        if request.step != "answer":
            return
        with self._lock:
            self.answered += 1
            if result.error_kind is not None:
                self.errors[result.error_kind] = self.errors.get(result.error_kind, 0) + 1
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens

    def add_drawn(self, agents: int, error: bool, prompt_tokens: int, answer_tokens: int) -> None:
        """Count a distribution-mode group's agents at once (`error`: the group failed)."""
        with self._lock:
            self.answered += agents
            if error:
                self.errors["model_error"] = self.errors.get("model_error", 0) + agents
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += answer_tokens

    def snapshot(self) -> dict[str, Any]:
        """The counts so far, as plain data."""
        with self._lock:
            return {
                "answered": self.answered,
                "errors": dict(self.errors),
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            }


_PROGRESS: ContextVar[BatchProgress | None] = ContextVar("workbench_batch_progress", default=None)


@contextmanager
def track_progress(progress: BatchProgress) -> Iterator[BatchProgress]:
    """Within the block (its tasks and worker threads too), models report into `progress`."""
    token = _PROGRESS.set(progress)
    try:
        yield progress
    finally:
        _PROGRESS.reset(token)


def report_answered(request: ChatRequest, result: ChatResult) -> None:
    """Called by a model as each request's result is ready; nothing when no batch is tracked."""
    progress = _PROGRESS.get()
    if progress is not None:
        progress.add(request, result)


def report_drawn(
    request: ChatRequest, agents: int, error: bool, prompt_tokens: int, answer_tokens: int
) -> None:
    """Called as a distribution-mode group's answers are drawn (its `agents` at once); nothing
    when no batch is tracked or for the extraction step."""
    progress = _PROGRESS.get()
    if progress is not None and request.step == "answer":
        progress.add_drawn(agents, error, prompt_tokens, answer_tokens)
