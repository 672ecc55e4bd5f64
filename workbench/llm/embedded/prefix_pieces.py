"""Canonical pieces of a prompt, so an answer never depends on the prompts evaluated before it.

llama.cpp's numbers for a token depend on how its batch was cut: measured on SmolLM2 here, the
logits of a prompt whose last token is evaluated alone differ (by up to 0.5) from the same prompt
evaluated in one chunk. Reusing "the longest common prefix" with the previous request cuts each
prompt where its neighbour happens to stop matching, so an agent's answer changed with its batch,
its shard and its backend.

Here a prompt is cut only at fixed places: after every token that ends in a newline, a colon or
a comma (the engine's rule, `engine.PIECES_RULE`; the last piece is not cut off from the answer
header; commas cut an agent's earlier numbers apart, so histories share their prefixes), and the
tokens of a piece are always evaluated as one batch (chunks of `n_batch` counted from the
piece's start). A piece's state then
depends only on the tokens up to its end, whoever evaluated it: a request may reuse the cached
state of the previous prompt up to the last piece start both prompts share (cut the same way),
and always evaluates its own last piece, whose logits it samples from (an identical prompt takes
the very logits that evaluation gave, kept by the engine). A prompt tree (system text, round
question, persona, memory) is shared piece by piece, and every answer is a function of its own
prompt, sampling settings and seed.

Measured on this build (SmolLM2, CPU): a decode of fewer than 64 rows gives every row the
numbers it gets alone, however many sequences share the decode (4 prompt tails of 13 tokens in
one decode: bitwise equal); from 64 rows llama.cpp's matrix products take another path and
differ by up to 0.8. So where every piece is shorter than 64 tokens, moving a cut changes no
number (the comma cuts left every answer of the quickstart at 3,000 agents the same), and the
cost of a distinct prompt is its own tokens (about 4 ms each on 2 cores, batched or not).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence


def piece_starts(tokens: Sequence[int], cuts_after: Callable[[int], bool]) -> list[int]:
    """Where the prompt's pieces start: 0 and every position after a token that `cuts_after`
    (a newline, say). A one-token piece (an empty line) is evaluated alone wherever it occurs,
    which is as canonical as any other cut."""
    starts = [0] if tokens else []
    starts.extend(i + 1 for i in range(len(tokens) - 1) if cuts_after(tokens[i]))
    return starts


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def prompt_pieces(tokens: Sequence[int], cuts_after: Callable[[int], bool]) -> list[int]:
    """The piece starts an engine evaluates a chat prompt in: `piece_starts`, with the last
    piece joined to the one before it. A chat prompt ends with the template's few-token
    assistant header right after the agent's own last words; one evaluation instead of two
    saves a model call's fixed cost per agent."""
    starts = piece_starts(tokens, cuts_after)
    return starts[:-1] if len(starts) > 1 else starts


def reusable_prefix(
    tokens: Sequence[int],
    starts: Sequence[int],
    cached: Sequence[int],
    cached_starts: Sequence[int],
) -> int:
    """How many of `tokens` may be taken from the cache, which holds `cached` evaluated in the
    pieces `cached_starts`: the furthest piece start up to which both prompts share their tokens
    and were cut in the same pieces, short of the prompt's own last piece (its logits are
    sampled from, so it is evaluated)."""
    shared = min(common_prefix(tokens, cached), len(cached))
    ends = [*cached_starts, len(cached)]
    best = 0
    for mine, theirs in zip(starts, ends, strict=False):  # the last of `starts`: the last piece
        if mine != theirs or mine > shared:
            break
        best = mine
    return best


def pieces(starts: Sequence[int], begin: int, length: int) -> list[tuple[int, int]]:
    """The (start, end) token ranges still to evaluate from piece start `begin` to `length`."""
    cuts = [s for s in starts if s >= begin] + [length]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def chunks(starts: Sequence[int], begin: int, length: int, n_batch: int) -> list[tuple[int, int]]:
    """The (start, end) ranges each evaluated as one batch from piece start `begin`: every
    piece in chunks of `n_batch` counted from the piece's own start (the canonical rule)."""
    return [
        (c, min(b, c + n_batch))
        for a, b in pieces(starts, begin, length)
        for c in range(a, b, n_batch)
    ]
