"""Answer-trie nodes of many prompts on one llama.cpp context: each state in its own sequence,
the one-token answer rows of many nodes in one decode.

A node's logits are those of its prompt evaluated alone in canonical pieces (`prefix_pieces`)
and each answer token after it decoded alone. Most of a late round is small nodes (a prompt
tail and a token or two each), and a one-token decode costs about as much as 4 batched rows
(16 ms against 4 ms on SmolLM2 here): the weights are read once per decode. So each state
(a prompt, or a prompt and the answer tokens drawn so far) lives in a sequence of a unified KV
cache, a child is a copy of its parent's sequence (cells shared, no recomputation) plus one
row, and the rows of up to `ROWS` nodes go into one `llama_decode`.

That is exact only where a row's numbers do not depend on its neighbours or on where its cells
lie in the cache. Measured on this build: with flash attention (the engine's setting), a
prompt piece evaluated in its own decode on any sequence, with other sequences' cells around,
and one-token rows batched 2 to 48 at a time, are bitwise equal to the same evaluation alone
from a cleared context; without flash attention they differ by up to 1.9 (the softmax sums
over cache cells in cell order). Pieces of several sequences in one decode differ (by up to
1.2) from 4 sequences up, so prompt pieces are never batched. The rule is checked again on
every engine before it is used (`self_check`); where rows differ, every row is decoded alone
(`rows == 1`), which is the plain path.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.llm.embedded.engine import use_threads
from workbench.llm.embedded.prefix_pieces import chunks, prompt_pieces, reusable_prefix

ROWS = 32
"""Most answer rows per decode (bitwise equal to alone measured up to 48 here)."""
SEQUENCES = 256
"""Sequences of the context (llama.cpp's most): one keeps dropped states' cells (below)."""
CELLS = 4096
"""KV cells of the context (about 23 KB each for SmolLM2): never fewer than the model's n_ctx.
States share the cells of their common prefix. Every decode's attention scans all cells
written, so a bigger arena is slower: a 14-token prompt tail took 56 ms with 300 cells
written and 90 ms with 16,000."""
DRAIN = 0.75
"""Written past this share of the cells, the arena asks for no new walks (`filling`): once the
walks in flight finish, a call of new prompts clears it without losing a state in use."""

Key = tuple[tuple[int, ...], tuple[int, ...]]
"""A state: (prompt tokens, answer tokens after it)."""


class _Full(Exception):
    """The cells written since the last clear reached the end of the cache."""


@dataclass
class _Held:
    key: Key
    starts: list[int]  # the prompt's canonical piece starts


class NodeSlots:
    """States of answer tries held in the sequences of one llama.cpp context on a loaded
    model; `logits(keys)` gives every state's full logits, evaluating what is missing.

    The cache is written as an arena: a dropped state's cells go to a sequence no row reads
    (`self.grave`) instead of being freed, so llama.cpp places every new cell after the ones
    before it and each sequence's cells lie in position order, as they do alone (flash
    attention sums over cells in cell order: a cell placed in a hole before its prompt's
    cells changed answers). When the arena is full it is cleared, and what a call still
    needs is evaluated again."""

    def __init__(
        self,
        llm: Any,
        cuts_after: Callable[[int], bool],
        *,
        cells: int = CELLS,
        sequences: int = SEQUENCES,
        rows: int = ROWS,
    ) -> None:
        import llama_cpp

        params = llama_cpp.llama_context_params.from_buffer_copy(llm.context_params)
        params.n_ctx = max(cells, llm.context_params.n_ctx)
        params.n_seq_max = sequences
        params.kv_unified = True
        self.ctx = llama_cpp.llama_init_from_model(llm._model.model, params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create a multi-sequence context")
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.n_vocab = llm.n_vocab()
        self.n_batch = llm.n_batch
        self.cells = params.n_ctx
        self.grave = sequences - 1
        self.cuts_after = cuts_after
        self.rows = rows
        self._batch = llama_cpp.llama_batch_init(max(self.n_batch, rows), 0, 1)
        self._held: OrderedDict[int, _Held] = OrderedDict()  # sequence -> state, oldest first
        self._where: dict[Key, int] = {}
        self._by_prompt: dict[tuple[int, ...], set[int]] = {}  # sequences holding each prompt
        self._prompts: list[tuple[int, ...]] = []  # those prompts, sorted
        self._written = 0  # cells written since the last clear
        self._pinned: set[int] = set()  # sequences no evaluation may drop now
        self.decodes = 0  # llama_decode calls
        self.rows_decoded = 0  # answer rows (one token each)
        self.row_calls = 0  # decodes of answer rows
        self.evaluated = 0  # prompt tokens evaluated
        self.clears = 0  # times the arena was full

    def close(self) -> None:
        """Free the context (the model stays loaded)."""
        import llama_cpp

        if self.ctx:
            llama_cpp.llama_batch_free(self._batch)
            llama_cpp.llama_free(self.ctx)
            self.ctx = None

    def set_threads(self, threads: int) -> None:
        """Threads for the next decodes (of one row: `ONE_ROW_THREADS`)."""
        use_threads(self.ctx, threads)

    def clear(self) -> None:
        """Hold nothing, the arena empty (also after a failure: a half-written sequence is
        never reused)."""
        import llama_cpp

        llama_cpp.llama_memory_clear(self.memory, True)
        self._held.clear()
        self._where.clear()
        self._by_prompt.clear()
        self._prompts.clear()
        self._written = 0

    @property
    def filling(self) -> bool:
        """Whether the arena is nearly full: new walks should wait for a clear."""
        return self._written > DRAIN * self.cells

    def logits(self, keys: Sequence[Key]) -> list[np.ndarray]:
        """The full logits of every state, in order, each evaluated here (a held state keeps
        no logits: it is a parent): prompts each in their own decodes, then the answer rows
        depth by depth, `self.rows` to a decode. Missing ancestors are evaluated on the way.
        A full arena is cleared and the call made again; a call that alone overfills it is
        made key by key."""
        if self.filling and all(not prefix for _, prefix in keys):
            self.clears += 1
            self.clear()  # only new prompts: no state in use is lost
        try:
            try:
                return self._logits(keys)
            except _Full:
                self.clears += 1
                self.clear()
                try:
                    return self._logits(keys)
                except _Full:
                    out = []
                    for key in keys:
                        self.clears += 1
                        self.clear()
                        out.extend(self._logits([key]))
                    return out
        except (ValueError, RuntimeError, _Full):
            self.clear()
            raise

    def _logits(self, keys: Sequence[Key]) -> list[np.ndarray]:
        wanted = set(keys)
        needed = set(wanted)
        for prompt, prefix in wanted:
            for k in range(len(prefix) - 1, -1, -1):
                parent = (prompt, prefix[:k])
                if parent in self._where or parent in needed:
                    break
                needed.add(parent)
        by_depth: dict[int, list[Key]] = {}
        for key in needed:
            by_depth.setdefault(len(key[1]), []).append(key)
        out: dict[Key, np.ndarray] = {}
        for key in sorted(by_depth.get(0, [])):
            out[key] = self._prompt(key[0])
        for depth in sorted(d for d in by_depth if d > 0):
            level = sorted(by_depth[depth])
            step = max(1, min(self.rows, self.grave // 2))  # room for parents and children
            for i in range(0, len(level), step):
                out.update(self._rows(level[i : i + step], level[i:]))
        return [out[key] for key in keys]

    def _drop(self, seq: int) -> None:
        """Forget a held state; its cells stay written (moved to the grave sequence)."""
        import llama_cpp

        llama_cpp.llama_memory_seq_cp(self.memory, seq, self.grave, -1, -1)
        llama_cpp.llama_memory_seq_rm(self.memory, seq, -1, -1)
        key = self._held.pop(seq).key
        del self._where[key]
        holders = self._by_prompt[key[0]]
        holders.discard(seq)
        if not holders:
            del self._by_prompt[key[0]]
            del self._prompts[bisect.bisect_left(self._prompts, key[0])]

    def _take(self, cells: int, reserved: set[int], keep: set[int] = frozenset()) -> int:
        """A free sequence (not `reserved`) for a state of `cells` more cells, dropping the
        oldest held state if every sequence is taken: never one of `self._pinned`, and one
        of `keep` (wanted soon) only when nothing else is left."""
        if self._written + cells > self.cells:
            raise _Full
        self._written += cells
        for spare in (keep | self._pinned, self._pinned):
            for seq in list(self._held):
                if len(self._held) + len(reserved) < self.grave:
                    break
                if seq not in spare:
                    self._drop(seq)
        if len(self._held) + len(reserved) >= self.grave:
            raise RuntimeError("no sequence free for an answer-trie node")
        return next(s for s in range(self.grave) if s not in self._held and s not in reserved)

    def _hold(self, seq: int, key: Key, starts: list[int]) -> None:
        if key in self._where:  # evaluated again: the older copy goes
            self._drop(self._where[key])
        self._held[seq] = _Held(key, starts)
        self._where[key] = seq
        if key[0] not in self._by_prompt:
            self._by_prompt[key[0]] = set()
            bisect.insort(self._prompts, key[0])
        self._by_prompt[key[0]].add(seq)

    def _source(self, tokens: tuple[int, ...], starts: list[int]) -> tuple[int, int]:
        """The held sequence to copy a new prompt's cells from, and how many: the most any
        held prompt shares canonically (one of the new prompt's two neighbours in sorted
        order shares the longest prefix)."""
        i = bisect.bisect_left(self._prompts, tokens)
        best, keep = -1, 0
        for prompt in self._prompts[max(0, i - 1) : i + 2]:
            seq = next(iter(self._by_prompt[prompt]))
            shared = reusable_prefix(tokens, starts, prompt, self._held[seq].starts)
            if shared > keep:
                best, keep = seq, shared
        return best, keep

    def _prompt(self, prompt: tuple[int, ...]) -> np.ndarray:
        """Evaluate a prompt into a sequence of its own, in canonical pieces, reusing the
        longest canonical prefix another held sequence has."""
        import llama_cpp

        tokens = list(prompt)
        starts = prompt_pieces(tokens, self.cuts_after)
        source, keep = self._source(prompt, starts)
        pinned = set(self._pinned)
        self._pinned.add(source)
        try:
            seq = self._take(len(tokens) - keep, set())
        finally:
            self._pinned = pinned
        if keep:
            llama_cpp.llama_memory_seq_cp(self.memory, source, seq, 0, keep)
        for c, end in chunks(starts, keep, len(tokens), self.n_batch):
            rows = [(t, c + i, seq) for i, t in enumerate(tokens[c:end])]
            self._decode(rows, outputs=1 if end == len(tokens) else 0)
        self.evaluated += len(tokens) - keep
        self._hold(seq, (prompt, ()), starts)
        return self._row(len(rows) - 1)

    def _rows(self, chunk: list[Key], rest: list[Key]) -> dict[Key, np.ndarray]:
        """One decode for the answer rows of `chunk` after their parents (evaluated first
        where they were dropped); the parents of `rest` (the level from here) are kept where
        there is room."""
        import llama_cpp

        pinned = set(self._pinned)
        try:
            for prompt, prefix in chunk:
                parent = (prompt, prefix[:-1])
                if parent not in self._where:
                    self._logits([parent])
                self._pinned.add(self._where[parent])
            soon = {self._where[(p, x[:-1])] for p, x in rest if (p, x[:-1]) in self._where}
            rows, placed, reserved = [], [], set()
            for prompt, prefix in chunk:
                parent = self._where[(prompt, prefix[:-1])]
                child = self._take(1, reserved, soon)
                reserved.add(child)
                llama_cpp.llama_memory_seq_cp(self.memory, parent, child, -1, -1)
                rows.append((prefix[-1], len(prompt) + len(prefix) - 1, child))
                placed.append((child, self._held[parent].starts))
        finally:
            self._pinned = pinned
        self._decode(rows, outputs=len(rows))
        self.rows_decoded += len(rows)
        self.row_calls += 1
        out = {}
        for i, (key, (child, starts)) in enumerate(zip(chunk, placed, strict=True)):
            self._hold(child, key, starts)
            out[key] = self._row(i)
        return out

    def _decode(self, rows: list[tuple[int, int, int]], *, outputs: int) -> None:
        """One llama_decode of (token, position, sequence) rows, with logits for the last
        `outputs` rows (a prompt's last chunk: 1; a chunk before it: 0; answer rows: all)."""
        import llama_cpp

        batch = self._batch
        for i, (token, pos, seq) in enumerate(rows):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = i >= len(rows) - outputs
        batch.n_tokens = len(rows)
        code = llama_cpp.llama_decode(self.ctx, batch)
        self.decodes += 1
        if code != 0:
            raise RuntimeError(f"llama_decode failed ({code}) on {len(rows)} rows")

    def _row(self, i: int) -> np.ndarray:
        import llama_cpp

        pointer = llama_cpp.llama_get_logits_ith(self.ctx, i)
        return np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()


def self_check(
    slots: NodeSlots,
    alone: Callable[[Key], np.ndarray],
    prompt: tuple[int, ...],
    tokens: Sequence[int],
) -> str:
    """Check `slots` against the plain path (`alone`: one state evaluated alone) on a prompt
    and one- and two-token answers of `tokens`: batched rows first, then one row per decode
    (`slots.rows` set to what passed, 0 when not even that did). Says what it found."""
    first = tokens[0]
    keys = [
        (prompt, ()),
        *((prompt, (t,)) for t in tokens),
        *((prompt, (first, t)) for t in tokens),
    ]
    reference = [alone(key) for key in keys]
    for rows in (slots.rows, 1):
        slots.rows = rows
        slots.clear()
        got = slots.logits(keys)
        worst = max(float(np.max(np.abs(a - b))) for a, b in zip(got, reference, strict=True))
        if worst == 0.0:
            slots.clear()
            return f"{len(keys)} states, {rows} row(s) per decode: bitwise equal to alone"
    slots.rows = 0
    slots.clear()
    return f"node slots differ from alone by up to {worst:.3g}: every node evaluated alone"
