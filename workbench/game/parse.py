"""Reading a guess out of a model's answer, with a status for every answer.

An answer that is only a number, as `float` reads it ("42", " 17.5 ", also "1e2"), skips the
search: the embedded model is grammar-constrained and answers that way up to a million times a
round. Otherwise the answer's *stated* answer wins, the first one (prefer="first", direct
answers) or the last one (prefer="last", step-by-step reasoning):
- a marker: "ANSWER: 33", "my final answer is 21", "the answer to this question is 30",
  "I choose 40", "I will guess 25", "I'd go with 22", "my guess: 30", "**Answer:** 22",
  "the number I chose is 4", "33 is my guess", "\\boxed{22}" (case-insensitive);
- a line that holds nothing but a number ("**22**", "22.");
- for direct answers only, a number the answer starts with ("33, since ...").
A marker in a conditional clause ("if the answer is 50, ...") or whose subject is somebody else
("others will choose 33") is not a stated answer. Without a stated answer, `stated_only` gives
NO_NUMBER (the policy then asks the extraction call); otherwise the first or last number that
can be a guess is taken.

Never a guess: numbers glued to a word or a unit ("17-year-old", "2nd", "5%", "11:11"), followed
by a unit-like word ("2 rounds", "100 players", "20 years", "10 of them"), labels ("round 2",
"step 3", "level 1"), list numbers at a line's start ("1. ..."), range bounds ("0 to 100",
"0-100", "between 0 and 100", "out of 100") and the parts of a fraction ("2/3", "200 / 3").
Numbers are an optional sign, digits and an optional decimal part; thousands separators are not
understood ("1,000" reads as 1).
"""

from __future__ import annotations

import enum
import math
import re
from collections import deque
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

# --------------------------------------------------------------------------- patterns

_NUM = r"[-+]?\d+(?:\.\d+)?"
_UNITS = (
    r"players?|people|persons?|participants?|agents?|individuals?|opponents?|members?|"
    r"students?|humans?|rounds?|steps?|levels?|iterations?|turns?|times?|games?|stages?|"
    r"years?|months?|weeks?|days?|hours?|minutes?|seconds?|percent|per\s?cent|points?|"
    r"dollars?|numbers|digits?|decimal|options|choices|"
    r"of\s+(?:them|us|you|the|all|those|these|our|my|your|their)"
)
# A number that can be a guess: on its left no word, decimal point, "digit," (thousands), "/",
# "letter-" ("level-1") or "digit-"/"digit:" (a range, a time); on its right no more digits,
# "/digit" (a fraction), "-digit"/":digit", a letter or "-letter" ("2nd", "17-year"), "%" or
# a unit-like word.
_ALONE = (
    rf"(?<![\w.])(?<!\d,)(?<!/)(?<![^\W\d]-)(?<!\d[-–:]){_NUM}"
    rf"(?!\.?\d)(?!\s*/\s*\d)(?![-–:]\d)(?!-?[^\W\d])(?!\s?[%°])(?!\s+(?:{_UNITS})\b)"
)
_LABELS = (
    r"round|step|level|player|stage|iteration|phase|part|option|case|scenario|turn|day|"
    r"year|example|strategy|method|type|group|team|question|rule|item"
)
# Spans that hold numbers which are never guesses; matched whole so no part of them is taken.
_NOT_GUESSES = "|".join(
    [
        r"\d+(?:\.\d+)?\s*/\s*\d+(?:\.\d+)?",  # a fraction
        rf"\bbetween\s+{_NUM}\s+and\s+{_NUM}",
        rf"\bfrom\s+{_NUM}\s+(?:to|through)\s+{_NUM}",
        rf"{_NUM}\s+to\s+{_NUM}",
        rf"\bout\s+of\s+{_NUM}",
        rf"\b(?:{_LABELS})\s*[#:]?\s*{_NUM}",
        r"(?m:^[ \t]*\d+[.)](?=[ \t]+\S))",  # a list number
    ]
)
_NUMBER_RE = re.compile(rf"(?:{_NOT_GUESSES})|(?P<value>{_ALONE})", re.IGNORECASE)

_GAP = r"[\s*_\"'`“”‘’]*+"  # spaces, markdown emphasis, quotes (possessive: no backtracking)
_SAYS = r"(?:is|was|be|equals|of|=|:|->|→)"
_HEDGE = (
    r"(?:(?:about|around|approximately|approx\.?|roughly|exactly|precisely|probably|likely|"
    r"maybe|perhaps|just|simply|only|close\s+to|near|somewhere\s+around)\s+|[~≈]\s*)*"
)
_VALUE = rf"{_GAP}(?:(?:the\s+)?number\s+)?{_HEDGE}{_GAP}(?P<value>{_ALONE})"
_NOUN_RE = re.compile(  # "my final answer is 21", "the number I chose is 4", "Answer: 22"
    r"\b(?:final\s+)?(?:answer|number(?!\s+of\b)|choice|estimate|selection|decision)\b"
    rf"(?:(?:\s++[a-z']++){{0,3}}?(?:{_GAP}{_SAYS})+)?{_VALUE}",
    re.IGNORECASE,
)
_VERB_RE = re.compile(  # "I choose 40", "I will guess 25", "my guess would be 30"
    rf"(?:\b(?:guess|pick)\b(?:\s+(?:would|will|should|might|could|must)\s+be|(?:{_GAP}{_SAYS})+)?"
    r"|\b(?:choose|chose|chosen|choosing|picked|picking|select|selected|selecting|"
    r"go(?:ing)?\s+(?:with|for)|went\s+(?:with|for)|settled?\s+(?:on|for)|opt\s+for|"
    rf"stick\s+with|submit|say)\b){_VALUE}",
    re.IGNORECASE,
)
_REVERSE_RE = re.compile(  # "33 is my guess", "22 is the answer"
    rf"(?P<value>{_ALONE}){_GAP}(?:is|would\s+be|will\s+be)\s+(?:my|the)\s+(?:final\s+)?"
    r"(?:answer|guess|choice|number|pick)\b",
    re.IGNORECASE,
)
_BOXED_RE = re.compile(rf"\\boxed\{{{_GAP}(?P<value>{_ALONE}){_GAP}\}}")
_MARKERS = (_NOUN_RE, _VERB_RE, _REVERSE_RE, _BOXED_RE)
_ASKED_RE = re.compile(rf"{ANSWER_MARKER}{_GAP}[:=]")  # the asked-for format is always stated
_LINE_RE = re.compile(  # a line that holds nothing but a number
    rf"^[ \t>#*_\"'`=~≈]*(?P<value>{_ALONE})[ \t*_\"'`.!]*$", re.MULTILINE
)
_LEADING_GAP_RE = re.compile(_GAP)

_CLAUSE_BREAK_RE = re.compile(
    r"[.!?;:,\n]|\b(?:then|so|thus|therefore|hence|but|and|because|since)\b", re.IGNORECASE
)
_HYPOTHESIS_RE = re.compile(
    r"\b(?:if|when|whenever|whether|suppose|supposing|assume|assuming|unless|imagine|let'?s|"
    r"let\s+us)\b",
    re.IGNORECASE,
)
_OTHERS_RE = re.compile(
    r"\b(?:everyone|everybody|others?|they|players|people|most|many|nobody|someone|anyone|"
    r"each|opponents?)\b",
    re.IGNORECASE,
)
_MY_RE = re.compile(  # the agent itself speaks right before the marker: "my", "I will", ...
    r"\b(?:my|I|I'm|I'll|I'd|I\s+(?:will|would|shall|am(?:\s+going\s+to)?|must|should|can))"
    r"(?:\s+(?:final|own|best|then|now|just|probably|definitely|really))?\s*\Z",
    re.IGNORECASE,
)
_CLAUSE_WINDOW = 200
"""How many characters before a marker are searched for the start of its clause."""


# --------------------------------------------------------------------------- search


def _mine(text: str, match: re.Match[str]) -> bool:
    """Whether a marker states the agent's own answer: its clause holds no hypothesis ("if"),
    and no other subject ("others will choose") unless the agent speaks right before it ("my",
    "I will"). The asked-for "ANSWER:" always does."""
    if _ASKED_RE.match(text, match.start()):
        return True
    start, end = match.start(), match.start("value")
    clause = max(0, start - _CLAUSE_WINDOW)
    for brk in _CLAUSE_BREAK_RE.finditer(text, clause, start):
        clause = brk.end()
    if _HYPOTHESIS_RE.search(text, clause, end):
        return False
    own = _MY_RE.search(text, clause, start) is not None
    return _OTHERS_RE.search(text, start if own else clause, end) is None


def _stated(text: str, prefer: Prefer) -> str | None:
    """The first or last stated answer of `text` (a marker, a number-only line; for direct
    answers also a leading number); None when it states none."""
    found: dict[int, str] = {}
    for pattern in _MARKERS:
        for match in pattern.finditer(text):
            if match.start("value") not in found and _mine(text, match):
                found[match.start("value")] = match["value"]
    for match in _LINE_RE.finditer(text):
        found.setdefault(match.start("value"), match["value"])
    if prefer == "first":
        lead = _LEADING_GAP_RE.match(text)
        first = _NUMBER_RE.match(text, lead.end() if lead else 0)
        if first is not None and first["value"] is not None:
            found.setdefault(first.start("value"), first["value"])
    if not found:
        return None
    return found[min(found) if prefer == "first" else max(found)]


def _any_number(text: str, prefer: Prefer) -> str | None:
    """The first or last number of `text` that can be a guess; None if there is none."""
    values = (m["value"] for m in _NUMBER_RE.finditer(text) if m["value"] is not None)
    if prefer == "first":
        return next(values, None)
    last = deque(values, maxlen=1)
    return last[0] if last else None


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
    text: str | None,
    low: float,
    high: float,
    prefer: Prefer = "first",
    *,
    stated_only: bool = False,
) -> tuple[float, Status]:
    """The guess in a model's answer and its status (module docstring: the rules).

    `stated_only`: take only a stated answer, never an incidental number, so that an answer
    without one comes back (nan, NO_NUMBER) and can go to the extraction call.
    """
    if prefer not in ("first", "last"):
        raise ValueError(f"prefer must be 'first' or 'last', got {prefer!r}")
    if not text:
        return float("nan"), Status.NO_NUMBER
    value = _plain(text)
    if value is not None:
        return _judge(value, low, high)
    found = _stated(text, prefer)
    if found is None and not stated_only:
        found = _any_number(text, prefer)
    if found is None:
        return float("nan"), Status.NO_NUMBER
    return _judge(float(found), low, high)


def parse_answers(
    texts: Sequence[str | None],
    errors: Sequence[str | None],
    low: float,
    high: float,
    prefer: Prefer = "first",
    *,
    stated_only: bool = False,
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
            value, status = parse_answer(text, low, high, prefer, stated_only=stated_only)
            guesses.append(value)
            statuses.append(status)
    return np.array(guesses, dtype=np.float64), np.array(statuses, dtype=STATUS_DTYPE)
