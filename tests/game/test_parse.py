import math

import numpy as np
import pytest

from workbench.game import STATUS_DTYPE, Status, parse_answer, parse_answers


def test_plain_number_is_ok():
    assert parse_answer("42", 0, 100) == (42.0, Status.OK)
    assert parse_answer(" 17.5\n", 0, 100) == (17.5, Status.OK)


@pytest.mark.parametrize("text", [None, "", "   ", "I have no idea.", "v1.2.3"])
def test_no_number(text):
    value, status = parse_answer(text, 0, 100)
    assert math.isnan(value)
    assert status is Status.NO_NUMBER


@pytest.mark.parametrize(("text", "value"), [("150", 150.0), ("Answer: -5", -5.0)])
def test_out_of_range_keeps_the_value(text, value):
    assert parse_answer(text, 0, 100) == (value, Status.OUT_OF_RANGE)


def test_range_bounds_are_inclusive():
    assert parse_answer("0", 0, 100)[1] is Status.OK
    assert parse_answer("100", 0, 100)[1] is Status.OK


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Level 0 says 50, level 1 says 33. ANSWER: 22", 22.0),
        ("answer = 33.5 (not 50)", 33.5),
        ("With 100 players my guess is 21, though 30 is tempting", 21.0),
        ("Guess: 4", 4.0),
        ("Final answer: 12, since 18 is too high", 12.0),
        ("**Answer:** 44", 44.0),
        ("The number is 7 out of 100", 7.0),
    ],
)
@pytest.mark.parametrize("prefer", ["first", "last"])
def test_marker_wins_over_other_numbers(text, value, prefer):
    assert parse_answer(text, 0, 100, prefer=prefer) == (value, Status.OK)


def test_fraction_is_not_taken_as_the_guess():
    assert parse_answer("2/3 of 60 gives 40. ANSWER: 40", 0, 100, prefer="first")[0] == 40.0
    assert parse_answer("Take 2/3 of 60", 0, 100, prefer="first")[0] == 60.0
    assert parse_answer("200 / 3 is about 66.67", 0, 100, prefer="first")[0] == 66.67


def test_first_vs_last_without_marker():
    text = "Everyone starts at 50, then 33, so I pick 22"
    assert parse_answer(text, 0, 100, prefer="first") == (50.0, Status.OK)
    assert parse_answer(text, 0, 100, prefer="last") == (22.0, Status.OK)


def test_range_dash_is_not_a_minus_sign():
    assert parse_answer("between 0-100 I pick 7", 0, 100, prefer="last") == (7.0, Status.OK)


def test_thousands_separator_is_not_understood():
    assert parse_answer("1,000", 0, 2000) == (1.0, Status.OK)


def test_bad_prefer():
    with pytest.raises(ValueError, match="prefer must be 'first' or 'last', got 'middle'"):
        parse_answer("1", 0, 100, prefer="middle")  # type: ignore[arg-type]


def test_parse_answers_reaches_every_status():
    texts = ["42", "no idea", "250", None, None, "I think 10"]
    errors = [None, None, None, "timeout", "connection reset", None]
    guesses, statuses = parse_answers(texts, errors, 0, 100)
    assert statuses.dtype == np.dtype(STATUS_DTYPE)
    assert statuses.tolist() == ["ok", "no_number", "out_of_range", "timeout", "model_error", "ok"]
    assert set(statuses) == {s.value for s in Status}
    np.testing.assert_array_equal(guesses, [42.0, np.nan, 250.0, np.nan, np.nan, 10.0])


def test_parse_answers_error_wins_over_text():
    guesses, statuses = parse_answers(["42"], ["boom"], 0, 100)
    assert math.isnan(guesses[0])
    assert statuses[0] == Status.MODEL_ERROR


def test_parse_answers_passes_prefer():
    guesses, _ = parse_answers(["from 50 down to 33"], [None], 0, 100, prefer="last")
    assert guesses[0] == 33.0


def test_parse_answers_plain_fast_path_many():
    texts = [str(i % 101) for i in range(100_000)]
    guesses, statuses = parse_answers(texts, [None] * len(texts), 0, 100)
    assert (statuses == Status.OK).all()
    np.testing.assert_array_equal(guesses, np.arange(100_000) % 101)


def test_parse_answers_lengths_must_match():
    with pytest.raises(ValueError, match="got 2 texts and 1 errors"):
        parse_answers(["1", "2"], [None], 0, 100)


def test_parse_answers_empty():
    guesses, statuses = parse_answers([], [], 0, 100)
    assert guesses.shape == statuses.shape == (0,)


def test_fast_path_reads_what_float_reads_but_not_nan_or_inf():
    assert parse_answer("1e2", 0, 100) == (100.0, Status.OK)
    assert parse_answer("nan", 0, 100)[1] is Status.NO_NUMBER
    assert parse_answer("-inf", 0, 100)[1] is Status.NO_NUMBER
