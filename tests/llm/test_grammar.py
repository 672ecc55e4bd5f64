import re

import numpy as np
import pytest

from workbench.llm.base import OutputConstraint, SamplingParams
from workbench.llm.grammar import integer_can_continue, integer_range_grammar

CANDIDATES = range(-2000, 2001)


def grammar_regex(grammar: str) -> re.Pattern[str]:
    """The grammar as a Python regex: it uses only "literals", [a-b] classes, | and parentheses."""
    assert grammar.startswith("root ::= ") and grammar.endswith("\n")
    body = grammar.removeprefix("root ::= ").strip()
    assert set(body) <= set('"()[]|-0123456789 '), body
    return re.compile(body.replace('"', "").replace(" ", ""))


def accepted(low: int, high: int) -> set[int]:
    pattern = grammar_regex(integer_range_grammar(low, high))
    return {n for n in CANDIDATES if pattern.fullmatch(str(n))}


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (0, 100),
        (13, 87),
        (7, 1234),
        (-20, 20),
        (5, 10),
        (100, 100),
        (0, 0),
        (1, 9),
        (10, 99),
        (99, 1000),
        (-50, -7),
        (-1999, 1999),
        (-1, 0),
        (0, 2000),
    ],
)
def test_grammar_matches_exactly_the_integers_in_range(low, high):
    assert accepted(low, high) == set(range(low, high + 1))


def test_grammar_is_exact_for_many_random_ranges():
    rng = np.random.default_rng(2024)
    for _ in range(60):
        low, high = sorted(int(v) for v in rng.integers(-1500, 1500, size=2))
        assert accepted(low, high) == set(range(low, high + 1)), (low, high)


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [
        (0, 100, "007"),
        (0, 100, "07"),
        (0, 100, "00"),
        (5, 10, "05"),
        (100, 100, "0100"),
        (-20, 20, "-0"),
        (-20, 20, "-05"),
        (0, 100, "+5"),
        (0, 100, ""),
        (0, 100, " 5"),
        (0, 100, "5.0"),
    ],
)
def test_grammar_rejects_other_spellings(low, high, text):
    assert not grammar_regex(integer_range_grammar(low, high)).fullmatch(text)


def test_grammar_rejects_low_above_high():
    with pytest.raises(ValueError, match=r"low <= high, got \[10, 5\]"):
        integer_range_grammar(10, 5)


def test_output_constraint_takes_one_constraint():
    with pytest.raises(ValueError, match="one constraint, got integer_range, regex"):
        OutputConstraint(integer_range=(0, 10), regex=r"\d+")
    with pytest.raises(ValueError, match="one constraint, got regex, json_schema"):
        OutputConstraint(regex=r"\d+", json_schema={"type": "integer"})
    with pytest.raises(ValueError, match=r"low <= high, got \(10, 0\)"):
        OutputConstraint(integer_range=(10, 0))
    assert OutputConstraint(integer_range=(3, 3)).integer_range == (3, 3)
    assert OutputConstraint().integer_range is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": 2.5}, "temperature"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_sampling_params_reject_bad_values_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        SamplingParams(**kwargs)


def test_sampling_params_accept_the_edges():
    params = SamplingParams(temperature=0, top_p=1, max_tokens=1)
    assert (params.temperature, params.top_p, params.max_tokens) == (0, 1, 1)


def test_an_integer_can_continue_only_while_the_range_holds_a_longer_one() -> None:
    def brute(text: str, low: int, high: int) -> bool:
        return any(str(n).startswith(text) and str(n) != text for n in range(low, high + 1))

    for low, high in [(0, 100), (0, 9), (5, 250), (-30, 7), (-5, -1), (10, 10)]:
        texts = ["", "-"] + [str(n) for n in range(low - 5, high + 5)] + ["-0", "05", "x"]
        for text in texts:
            assert integer_can_continue(text, low, high) == brute(text, low, high), (
                text,
                low,
                high,
            )
