"""The embedded model's answer-trie nodes: the logits of the allowed tokens after a prompt and
the answer tokens drawn so far (distribution mode, `walk`).

A node is evaluated exactly as one agent's own answer would be: the prompt in its canonical
pieces (`prefix_pieces`), then each answer token alone, one decode per token. So its logits are
the ones an agent asking alone from a cleared context would sample from, whichever nodes were
evaluated before it. The context keeps the last prompt and the answer tokens after it with the
logits each left, so a node's siblings and children cost one decode each; a bounded memo keeps
every node's allowed logits, so shards of one process that share prompts score them once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from workbench.llm.base import ChatRequest, SamplingParams
from workbench.llm.distribution.sampler import draw
from workbench.llm.distribution.scorer import Node, TurnTakingScorer
from workbench.llm.distribution.vocabulary import IntegerVocabulary
from workbench.llm.embedded.cpu_share import CpuShare
from workbench.llm.embedded.engine import (
    Engine,
    EngineCounters,
    chat_tokens,
    decode,
    last_logits,
    use_threads,
)
from workbench.llm.embedded.node_slots import ROWS, Key, NodeSlots, self_check
from workbench.llm.embedded.prefix_pieces import common_prefix

SELF_CHECK_PROMPT = b"<|im_start|>user\nPick a whole number from 0 to 100.\nYour number:"
"""The prompt the node slots are checked on (`node_slots.self_check`)."""
MEMO_NODES = 200_000
"""Node logits kept in memory (a few allowed logits each), most recently used first."""


class EngineModel(Protocol):
    """What the scorer asks of its model (a `LlamaCppModel`): its engine, how it evaluates a
    prompt there, its context size, thread count and counters."""

    n_ctx: int
    cpu: CpuShare
    counters: EngineCounters

    @property
    def engine(self) -> Engine: ...

    def evaluate(self, engine: Engine, tokens: list[int]) -> None: ...


class EmbeddedNodeScorer(TurnTakingScorer):
    """Scores trie nodes on a `LlamaCppModel`'s engine: `window` groups in step, their answer
    rows batched where the node slots allow, the shards of a loop taking turns."""

    window = 64  # groups walked in step: their answer rows share decodes (`node_slots`)

    def __init__(self, model: EngineModel) -> None:
        self.model = model
        self._memo: OrderedDict[Key, np.ndarray] = OrderedDict()
        self._memo_lock = threading.Lock()
        self.hits = 0

    @property
    def memo_hits(self) -> int:
        """Nodes answered from the memo so far."""
        return self.hits

    def describe(self) -> dict[str, Any]:
        """How node logits are computed here."""
        return {
            "nodes": "prompt in canonical pieces, then each answer token alone",
            "tokens": "the GGUF's own digit tokens",
            "rows": f"up to {ROWS} answer rows per decode where the engine's self-check "
            "finds them bitwise equal to decoding each alone",
        }

    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The GGUF's digit tokens and its end-of-generation tokens, for [low, high]."""
        return await asyncio.to_thread(self._vocabulary, low, high)

    def _vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        import llama_cpp

        engine = self.model.engine
        llm = engine.llm
        pieces, ends = [], []
        for token in engine.integer_tokens().tolist():
            if llama_cpp.llama_vocab_is_eog(llm._model.vocab, token):
                ends.append(token)
            else:
                pieces.append((token, llm.detokenize([token], special=True).decode("ascii")))
        return IntegerVocabulary(tuple(pieces), tuple(ends), low, high)

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """Each request's chat tokens, as the model formats them."""
        return await asyncio.to_thread(self._prompt_tokens, list(requests))

    def _prompt_tokens(self, requests: list[ChatRequest]) -> list[tuple[int, ...]]:
        engine = self.model.engine
        out = []
        for request in requests:
            tokens, _ = chat_tokens(engine.llm, engine.formatter, request)
            if len(tokens) >= self.model.n_ctx:
                raise ValueError(
                    f"Requested tokens ({len(tokens)}) exceed context window of {self.model.n_ctx}"
                )
            out.append(tuple(tokens))
        return out

    def accepting(self) -> bool:
        """Whether new walks may start now (no: the node slots are nearly full, and clear
        once the walks in flight are done)."""
        slots = self.model.engine.slots
        return not (slots and slots.filling)

    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """The allowed logits of every node (evaluated together, sharing what they can)."""
        return await asyncio.to_thread(self.score_sync, list(nodes))

    def score_sync(self, nodes: list[Node]) -> list[np.ndarray]:
        """`score` on this thread: memo hits first, the rest evaluated under the engine lock
        (checked again there: another shard of this process may have scored them)."""
        keys = [(node.prompt, node.prefix) for node in nodes]
        kept = {key: self._remembered(key) for key in dict.fromkeys(keys)}
        if any(v is None for v in kept.values()):
            engine = self.model.engine
            with engine.lock:
                missing = [k for k, v in kept.items() if v is None]
                kept.update({k: self._remembered(k) for k in missing})
                missing = [k for k in missing if kept[k] is None]
                if missing:
                    start = time.perf_counter()
                    fresh = self._evaluate(engine, missing)
                    self.model.counters.score_s += time.perf_counter() - start
                    for key, full in zip(missing, fresh, strict=True):
                        kept[key] = self._keep(key, full)
        candidates = self._candidates()
        return [
            kept[key][np.searchsorted(candidates, node.allowed)]  # type: ignore[index]
            for key, node in zip(keys, nodes, strict=True)
        ]

    def _keep(self, key: Key, full: np.ndarray) -> np.ndarray:
        """A node's allowed logits into the memo."""
        kept = full[self._candidates()].astype(np.float64)
        self.model.counters.nodes += 1
        with self._memo_lock:
            self._memo[key] = kept
            if len(self._memo) > MEMO_NODES:
                self._memo.popitem(last=False)
        return kept

    def _remembered(self, key: Key) -> np.ndarray | None:
        """A scored node's allowed logits from the memo (None if not there)."""
        with self._memo_lock:
            known = self._memo.get(key)
            if known is not None:
                self._memo.move_to_end(key)
                self.hits += 1
            return known

    def _candidates(self) -> np.ndarray:
        return self.model.engine.integer_tokens()

    def _evaluate(self, engine: Engine, keys: list[Key]) -> list[np.ndarray]:
        """The full logits of `keys`: in the engine's node slots, rows batched where its
        self-check showed them exact, else each alone on the engine's own context."""
        slots = self._slots(engine)
        threads = self.model.cpu.threads()
        counters = self.model.counters
        if slots is None:  # in prompt order, so each prompt shares the most with the one before
            order = sorted(range(len(keys)), key=keys.__getitem__)
            full: list[np.ndarray] = [np.empty(0)] * len(keys)
            for i in order:
                full[i] = self._alone(engine, keys[i])
            return full
        slots.set_threads(threads)
        before = (slots.evaluated, slots.rows_decoded, slots.row_calls)
        try:
            return slots.logits(keys)
        finally:
            counters.evaluated_tokens += slots.evaluated - before[0]
            counters.decoded_tokens += slots.rows_decoded - before[1]
            counters.row_calls += slots.row_calls - before[2]

    def _slots(self, engine: Engine) -> NodeSlots | None:
        """The engine's node slots, made and self-checked on first use (None: they did not
        give the plain path's numbers here, so every node is evaluated alone)."""
        if engine.slots is None:
            slots = NodeSlots(engine.llm, engine.cuts_after)
            slots.set_threads(self.model.cpu.threads())
            prompt = tuple(engine.llm.tokenize(SELF_CHECK_PROMPT, add_bos=False, special=True))
            rows = [int(t) for t in engine.integer_tokens()[:8]]
            engine.slots_note = self_check(
                slots, lambda key: self._alone(engine, key), prompt, rows
            )
            if not slots.rows:
                slots.close()  # its context is never used
            engine.slots = slots if slots.rows else False
            engine.forget()
        return engine.slots or None

    def _alone(self, engine: Engine, key: Key) -> np.ndarray:
        """One node's full logits on the engine's own context: the prompt in canonical pieces,
        then each answer token decoded alone (the plain path)."""
        model, llm = self.model, engine.llm
        threads = model.cpu.threads()
        use_threads(llm.ctx, threads)
        prompt, prefix = list(key[0]), key[1]
        try:
            if engine.cached != prompt or engine.logits is None:
                model.evaluate(engine, prompt)
            shared = common_prefix(engine.answer, prefix)
            if shared == len(prefix):
                return engine.answer_logits[shared - 1] if shared else engine.logits
            del engine.answer[shared:], engine.answer_logits[shared:]
            llm.n_tokens = len(prompt) + shared
            for token in prefix[shared:]:
                decode(llm, [token], logits=True)
                engine.answer.append(token)
                engine.answer_logits.append(last_logits(llm).copy())
                model.counters.decoded_tokens += 1
                model.counters.row_calls += 1
        except (ValueError, RuntimeError):
            engine.forget()
            raise
        return engine.answer_logits[-1]


def reference_answer(
    model: EngineModel,
    request: ChatRequest,
    params: SamplingParams,
    uniform: Callable[[int], float],
) -> str:
    """One agent's constrained answer computed alone, as distribution mode promises it: the
    engine's cache cleared, this request's prompt evaluated from nothing in its canonical
    pieces, each drawn token evaluated after it (`Llama.eval`), every token drawn with the
    workbench sampler and `uniform(depth)`, the agent's own uniform for that step. The check
    that the answer trie changes no answer (`runtime.exactness`)."""
    constraint = request.constraint
    if constraint is None or constraint.integer_range is None:
        raise ValueError("a reference answer is drawn for an integer-constrained request")
    engine = model.engine
    llm = engine.llm
    vocab = EmbeddedNodeScorer(model)._vocabulary(*constraint.integer_range)
    with engine.lock:
        threads = model.cpu.threads()
        use_threads(llm.ctx, threads)
        engine.forget()
        try:
            tokens, _ = chat_tokens(llm, engine.formatter, request)
            model.evaluate(engine, tokens)
            logits = engine.logits
            text = ""
            for depth in range(params.max_tokens):
                if text and not vocab.can_continue(text):
                    break
                allowed = vocab.allowed(text)
                u = np.array([uniform(depth)])
                token = int(allowed[draw(logits[allowed].astype(np.float64), params, u)[0]])
                if vocab.is_end(token):
                    break
                text += vocab.piece(token)
                llm.eval([token])
                logits = last_logits(llm).copy()
        finally:
            engine.forget()
    return text
