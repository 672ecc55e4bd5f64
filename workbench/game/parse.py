"""Reading a guess out of a model's answer, with a status for every answer.

Numbers are kept simple: an optional sign, digits and an optional decimal part ("33", "-2",
"17.5"). Thousands separators are not understood ("1,000" reads as 1), and the parts of a
fraction written like "2/3" or "200 / 3" are never taken as a guess. An answer that is
only a number, as `float` reads it ("42", " 17.5 ", also "1e2"), skips the search: the
embedded model is grammar-constrained and answers that way up to a million times a round.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from typing import Literal

import numpy as np

ANSWER_MARKER = "ANSWER"
"""The word step-by-step prompts ask the model to end with ("ANSWER: <number>")."""

Prefer = Literal["first", "last"]


class Status(enum.StrEnum):
    """What became of one agent's answer; only OK guesses enter the round's mean."""

    OK = "ok"
    NO_NUMBER = "no_number"
    OUT_OF_RANGE = "out_of_range"
    MODEL_ERROR = "model_error"
    TIMEOUT = "timeout"


STATUS_DTYPE = f"<U{max(len(s.value) for s in Status)}"
"""numpy dtype of the status arrays `parse_answers` returns."""

# A number not glued to a word, a decimal point, "digit," (thousands) or "/", and not followed
# by more digits or by "/digit" (so a fraction's numerator is not taken either).
_NUMBER = r"(?<![\w.])(?<!\d,)(?<!/)[-+]?\d+(?:\.\d+)?(?!\.?\d)(?!\s*/\s*\d)"
_FRACTION = r"\d+(?:\.\d+)?\s*/\s*\d+(?:\.\d+)?"
# Fractions are matched whole (no "value" group) so that neither of their parts is picked.
_NUMBER_RE = re.compile(rf"{_FRACTION}|(?P<value>{_NUMBER})")
_MARKER_RE = re.compile(
    rf"\b(?:{ANSWER_MARKER}|guess|number)\b[\s*]*(?:is\b)?[\s*]*[:=]?[\s*]*"
    rf"(?P<value>{_NUMBER})",
    re.IGNORECASE,
)


def _pick(pattern: re.Pattern[str], text: str, prefer: Prefer) -> str | None:
    """The first or last "value" group of `pattern` in `text`; None if there is none."""
    found = (m["value"] for m in pattern.finditer(text) if m["value"] is not None)
    if prefer == "first":
        return next(found, None)
    values = list(found)
    return values[-1] if values else None


def _plain(text: str) -> float | None:
    """The value of a text that is just a finite number (what `float` reads); None otherwise."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _judge(value: float, low: float, high: float) -> tuple[float, Status]:
    """(value, OK) inside [low, high], (value, OUT_OF_RANGE) outside."""
    return value, Status.OK if low <= value <= high else Status.OUT_OF_RANGE


def parse_answer(
    text: str | None, low: float, high: float, prefer: Prefer = "first"
) -> tuple[float, Status]:
    """The guess in a model's answer and its status.

    A marker ("ANSWER: 33", "my guess is 21", "final answer = 4.5", case-insensitive) wins;
    otherwise the first number (prefer="first", direct answers) or the last one
    (prefer="last", step-by-step reasoning). (nan, NO_NUMBER) when there is none.
    """
    if prefer not in ("first", "last"):
        raise ValueError(f"prefer must be 'first' or 'last', got {prefer!r}")
    if not text:
        return float("nan"), Status.NO_NUMBER
    value = _plain(text)
    if value is not None:
        return _judge(value, low, high)
    found = _pick(_MARKER_RE, text, prefer) or _pick(_NUMBER_RE, text, prefer)
    if found is None:
        return float("nan"), Status.NO_NUMBER
    return _judge(float(found), low, high)


def parse_answers(
    texts: Sequence[str | None],
    errors: Sequence[str | None],
    low: float,
    high: float,
    prefer: Prefer = "first",
) -> tuple[np.ndarray, np.ndarray]:
    """Parse a batch: (float64 guesses, statuses as a `STATUS_DTYPE` string array).

    `errors[i]` is None for a normal answer; "timeout" gives TIMEOUT and any other error text
    MODEL_ERROR, both with a nan guess. Plain-number answers skip the regex search.
    """
    if len(texts) != len(errors):
        raise ValueError(
            f"texts and errors must have the same length, got {len(texts)} texts "
            f"and {len(errors)} errors"
        )
    guesses: list[float] = []
    statuses: list[str] = []
    for text, error in zip(texts, errors, strict=True):
        if error is not None:
            guesses.append(math.nan)
            statuses.append(Status.TIMEOUT if error == Status.TIMEOUT else Status.MODEL_ERROR)
        else:
            value, status = parse_answer(text, low, high, prefer)
            guesses.append(value)
            statuses.append(status)
    return np.array(guesses, dtype=np.float64), np.array(statuses, dtype=STATUS_DTYPE)
