"""Canonical prompt pieces: where a prompt is cut, and how much of the cache a prompt may reuse."""

from __future__ import annotations

from workbench.llm.embedded.prefix_pieces import (
    chunks,
    common_prefix,
    piece_starts,
    pieces,
    prompt_pieces,
    reusable_prefix,
)

NEWLINE = 0  # in these token lists, token 0 ends a line


def starts(tokens: list[int]) -> list[int]:
    return piece_starts(tokens, lambda t: t == NEWLINE)


def test_pieces_start_after_every_line_end() -> None:
    tokens = [5, 6, 0, 7, 0, 0, 8, 9]
    assert starts(tokens) == [0, 3, 5, 6]  # the empty line (a lone 0) is a piece of its own
    assert pieces(starts(tokens), 0, len(tokens)) == [(0, 3), (3, 5), (5, 6), (6, 8)]
    assert pieces(starts(tokens), 5, len(tokens)) == [(5, 6), (6, 8)]
    assert starts([]) == [] and starts([4, 0]) == [0]  # a final newline starts nothing


def test_reuse_stops_at_the_last_shared_piece_start_never_mid_piece() -> None:
    cached = [1, 0, 2, 3, 0, 4, 4]
    tokens = [1, 0, 2, 3, 0, 4, 5]  # differs inside the third piece
    assert common_prefix(tokens, cached) == 6
    assert reusable_prefix(tokens, starts(tokens), cached, starts(cached)) == 5
    tokens = [1, 0, 2, 9, 0, 4, 4]  # differs inside the second piece
    assert reusable_prefix(tokens, starts(tokens), cached, starts(cached)) == 2


def test_an_identical_prompt_evaluates_its_own_last_piece() -> None:
    """Its logits are sampled from, and the cached ones were overwritten by the answer."""
    cached = [1, 0, 2, 0, 3, 3]
    assert reusable_prefix(cached, starts(cached), cached, starts(cached)) == 4


def test_a_prompt_extending_the_cached_one_reuses_all_of_it() -> None:
    cached = [1, 0, 2, 0]
    tokens = [1, 0, 2, 0, 3, 3, 0, 4]
    assert reusable_prefix(tokens, starts(tokens), cached, starts(cached)) == 4
    assert reusable_prefix(tokens, starts(tokens), [], []) == 0  # an empty cache: nothing


def test_a_chat_prompts_last_line_joins_the_one_before() -> None:
    tokens = [5, 0, 6, 6, 0, 7, 0]  # ..., the agent's line, then the assistant header
    assert prompt_pieces(tokens, lambda t: t == NEWLINE) == [0, 2]
    assert prompt_pieces([5, 6], lambda t: t == NEWLINE) == [0]


def test_no_reuse_where_the_two_prompts_were_cut_differently() -> None:
    """The cached prompt's joined last piece [2, 7) is not the longer prompt's [2, 5) + [5, 7)."""
    cached = [5, 0, 6, 6, 0, 7, 7]
    tokens = [5, 0, 6, 6, 0, 7, 7, 0, 8, 0, 9]
    cached_starts = prompt_pieces(cached, lambda t: t == NEWLINE)
    assert cached_starts == [0, 2]
    starts = prompt_pieces(tokens, lambda t: t == NEWLINE)
    assert starts == [0, 2, 5, 8]
    assert reusable_prefix(tokens, starts, cached, cached_starts) == 2


def test_chunks_count_n_batch_from_each_piece_start() -> None:
    assert chunks([0, 3, 10], 0, 12, 4) == [(0, 3), (3, 7), (7, 10), (10, 12)]
    assert chunks([0, 3, 10], 3, 12, 4) == [(3, 7), (7, 10), (10, 12)]  # from a reused prefix


def test_an_agents_earlier_numbers_are_pieces_of_their_own(embedded_model) -> None:
    """Issue 26, item 2: the engine cuts after each earlier number, so two agents whose
    histories begin alike share those pieces and evaluate only their own last number and the
    answer header; the cut rule is named in the model's identity."""
    from workbench.config import GameSpec
    from workbench.game.prompts import user_message
    from workbench.llm.base import ChatRequest
    from workbench.llm.embedded.engine import PIECES_RULE, chat_tokens

    engine = embedded_model.engine

    def tokens(history: list[float]) -> list[int]:
        text = user_message(GameSpec(), 3, [30.0, 20.0], "You are a farmer.", history)
        request = ChatRequest(({"role": "user", "content": text},))
        return chat_tokens(engine.llm, engine.formatter, request)[0]

    first, second = tokens([40.0, 25.0]), tokens([40.0, 31.0])
    cached = prompt_pieces(first, engine.cuts_after)
    keep = reusable_prefix(second, prompt_pieces(second, engine.cuts_after), first, cached)
    own = engine.llm.detokenize(second[keep:], special=True).decode()
    assert own.startswith(" 31.") and own.endswith("assistant\n")
    assert len(second) - keep <= 10  # the last number and the header, nothing before them
    assert embedded_model.identity["prompt_pieces"] == PIECES_RULE
