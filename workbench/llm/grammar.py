"""GBNF grammars that force a model's answer into a shape (llama.cpp's grammar format).

An integer range becomes an exact alternation of digit patterns, so a constrained model can only
emit a whole number in [low, high]: every answer parses, and none is out of range.
"""

from __future__ import annotations


def _range_patterns(low: int, high: int) -> list[str]:
    """Digit patterns (GBNF sequences) matching exactly the non-negative integers in [low, high]."""
    if low > high:
        return []
    slow, shigh = str(low), str(high)
    if len(slow) < len(shigh):
        # split at the digit-count boundary: [low, 99..9] and [10..0, high]
        boundary = 10 ** len(slow)
        return _range_patterns(low, boundary - 1) + _range_patterns(boundary, high)
    # same number of digits: walk the common prefix, then split on the first differing digit
    prefix = 0
    while prefix < len(slow) and slow[prefix] == shigh[prefix]:
        prefix += 1
    if prefix == len(slow):
        return [_literal(slow)]
    head = slow[:prefix]
    rest = len(slow) - prefix - 1
    lo_digit, hi_digit = int(slow[prefix]), int(shigh[prefix])
    if slow[prefix + 1 :] == "0" * rest and shigh[prefix + 1 :] == "9" * rest:
        return [_join(head, _digit_class(lo_digit, hi_digit), rest)]
    patterns = []
    # low's digit with low's tail .. 9s
    patterns += [head + f'"{lo_digit}"' + _tail(p) for p in _suffix_ge(slow[prefix + 1 :])]
    if hi_digit - lo_digit > 1:
        patterns.append(_join(head, _digit_class(lo_digit + 1, hi_digit - 1), rest))
    patterns += [head + f'"{hi_digit}"' + _tail(p) for p in _suffix_le(shigh[prefix + 1 :])]
    return [p.strip() for p in patterns]


def _literal(digits: str) -> str:
    return f'"{digits}"'


def _digit_class(lo: int, hi: int) -> str:
    return f"[{lo}]" if lo == hi else f"[{lo}-{hi}]"


def _join(head: str, first: str, rest: int) -> str:
    return " ".join(p for p in (head, first, *(["[0-9]"] * rest)) if p)


def _tail(pattern: str) -> str:
    return f" {pattern}" if pattern else ""


def _suffix_ge(digits: str) -> list[str]:
    """Patterns for digit strings of len(digits) that are >= digits."""
    if not digits:
        return [""]
    first, rest = int(digits[0]), digits[1:]
    out = [f'"{first}"' + _tail(p) for p in _suffix_ge(rest)]
    if first < 9:
        out.append(_join("", _digit_class(first + 1, 9), len(rest)))
    return out


def _suffix_le(digits: str) -> list[str]:
    """Patterns for digit strings of len(digits) that are <= digits."""
    if not digits:
        return [""]
    first, rest = int(digits[0]), digits[1:]
    out = []
    if first > 0:
        out.append(_join("", _digit_class(0, first - 1), len(rest)))
    out += [f'"{first}"' + _tail(p) for p in _suffix_le(rest)]
    return out


def integer_range_grammar(low: int, high: int) -> str:
    """A GBNF grammar whose only sentences are the integers in [low, high] (no leading zeros)."""
    if low > high:
        raise ValueError(f"integer range needs low <= high, got [{low}, {high}]")
    alternatives: list[str] = []
    if low < 0:
        negatives = _range_patterns(max(1, -high), -low)
        alternatives += [f'"-" {p}' for p in negatives]
    alternatives += _range_patterns(max(0, low), high) if high >= 0 else []
    return "root ::= " + " | ".join(f"({a})" for a in alternatives) + "\n"


def integer_range_regex(low: int, high: int) -> str:
    """A regular expression matching exactly the integers in [low, high] (vLLM's guided_regex)."""
    grammar = integer_range_grammar(low, high)
    body = grammar.removeprefix("root ::= ").strip()
    return body.replace('"', "").replace(" ", "")


def integer_can_continue(text: str, low: int, high: int) -> bool:
    """Whether some integer in [low, high] is written as `text` followed by more digits.

    When none is, the integer grammar allows only the end of the answer next, so a model can stop
    there without evaluating the last digit to sample that end (the same answer, one decode less).
    """
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    if not digits:
        return low < 0 if negative else True
    if not digits.isdigit() or digits.startswith("0"):
        return False  # "0" is whole; a leading zero never starts an integer of the grammar
    stem, widest = int(digits), max(abs(low), abs(high))
    scale = 10
    while stem * scale <= widest:
        first, last = stem * scale, stem * scale + scale - 1
        if (-last <= high and -first >= low) if negative else (first <= high and last >= low):
            return True
        scale *= 10
    return False
