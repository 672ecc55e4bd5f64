"""The tokens an integer answer is made of, and which of them the grammar allows after an
answer's text so far: what every scorer gives and every walk asks."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from workbench.llm.grammar import integer_can_continue


def complete_integer(text: str, low: int, high: int) -> bool:
    """Whether `text` is an integer of the grammar in [low, high] (no leading zeros, no -0)."""
    digits = text[1:] if text.startswith("-") else text
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        return False
    if text.startswith("-") and digits == "0":
        return False
    return low <= int(text) <= high


@dataclass(frozen=True)
class IntegerVocabulary:
    """The tokens an integer answer can be made of: `pieces` (token id -> its text, made only of
    digits and "-") and `end_ids` (the end-of-generation tokens), for one range [low, high]."""

    pieces: tuple[tuple[int, str], ...]
    end_ids: tuple[int, ...]
    low: int
    high: int

    def allowed(self, text: str) -> np.ndarray:
        """Token ids the grammar allows after answer `text`, ascending."""
        return _allowed(self, text)

    def can_continue(self, text: str) -> bool:
        """Whether any token other than the end may follow `text`."""
        return integer_can_continue(text, self.low, self.high)

    def is_end(self, token: int) -> bool:
        """Whether `token` ends the answer."""
        return token in self.end_ids

    def piece(self, token: int) -> str:
        """The text of a digit token."""
        return _piece_map(self)[token]


@lru_cache(maxsize=64)
def _piece_map(vocab: IntegerVocabulary) -> dict[int, str]:
    return dict(vocab.pieces)


@lru_cache(maxsize=4096)
def _allowed(vocab: IntegerVocabulary, text: str) -> np.ndarray:
    ok = [
        token
        for token, piece in vocab.pieces
        if complete_integer(text + piece, vocab.low, vocab.high)
        or integer_can_continue(text + piece, vocab.low, vocab.high)
    ]
    if complete_integer(text, vocab.low, vocab.high):
        ok.extend(vocab.end_ids)
    out = np.array(sorted(set(ok)), dtype=np.int64)
    out.setflags(write=False)
    return out
