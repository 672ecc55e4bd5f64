"""Parsing a guess out of answers: plain numbers, stated answers, and numbers never taken.

The long texts are modelled on what SmolLM2-135M (embedded, unconstrained, step-by-step prompt)
and larger instruct models behind vLLM really answer.
"""

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
    text = "Everyone starts at 50, then 33, then 22"
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


# --------------------------------------------------------------------------- stated answers

STEP_BY_STEP = (
    "Let's think step by step.\n\n"
    "1. If every player picks at random, the average is 50.\n"
    "2. 2/3 of 50 is about 33.\n"
    "3. If everyone thinks this way, they will choose 33, and 2/3 of 33 is 22.\n\n"
    "Since there are 100 players and the game is played once, I will guess 22.\n\n"
    "ANSWER: 22"
)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (STEP_BY_STEP, 22.0),
        (
            "As a 17-year-old student I think most players will choose around 50. Two thirds "
            "of that is 33, so my final answer is 33.",
            33.0,
        ),
        ("I think others will choose 50, so I choose 33.", 33.0),
        ("If I choose 50, everyone else wins. My guess: 30", 30.0),
        (
            "**Reasoning:** The average of 0 to 100 is 50; 2/3 of that is 33.33.\n\n**Answer:** 22",
            22.0,
        ),
        ("Step 1: the average is 50.\nStep 2: two thirds gives 33.\nStep 3: 22.\n\n**22**", 22.0),
        ("I'd go with 25 - that's my pick.", 25.0),
        ("My answer would probably be around 21.", 21.0),
        ("Hmm. The final answer is $\\boxed{18}$.", 18.0),
        ("I'm 35 years old and I pick 30.", 30.0),
        ("At 11:11 I choose the number 17.", 17.0),
        ("Each of the 100 players picks a number between 0 and 100. ANSWER: **40**", 40.0),
        ("22 is my guess, although 33 is possible.", 22.0),
        ("I will guess 25. In round 2 I may go lower.", 25.0),
        # SmolLM2-135M, unconstrained
        ("The number that I chose is 55.", 55.0),
        ("The number I'm after is 7.", 7.0),
        ("You're a female player educated to the high school level.\nThe answer is: 3", 3.0),
        ("A: 100\n\nI would choose 100.", 100.0),
        (
            "I'm actually a female player educated to the bachelor's degree level.\n"
            'I\'ve just finished my last response with a "ANSWER: 2", which is correct.',
            2.0,
        ),
    ],
)
@pytest.mark.parametrize("stated_only", [False, True])
def test_the_last_stated_answer_of_reasoning(text, value, stated_only):
    assert parse_answer(text, 0, 100, "last", stated_only=stated_only) == (value, Status.OK)


@pytest.mark.parametrize(
    ("text", "loose"),
    [
        # SmolLM2-135M, unconstrained: numbers, none of them a guess
        ("You're one of 24 players in a number-choosing game.", None),
        (
            "I'm Emily, a 22-year-old female named Kara, and I'm part of a team that specializes "
            "in ancient Egyptian mythology.",
            None,
        ),
        (
            "I'm a female player with a background of 20 years of experience in the medical field.",
            None,
        ),
        (
            "I'm currently sitting in a room with 20 people. 10 of them are male, and the rest "
            "are female.",
            None,
        ),
        ("I'm a 21-year-old female player, 19 years old, in a college team. I'm the 2nd.", None),
        ("In round 2, about 5% of the players choose a number from 0 to 100.", None),
        ("The game lasts 2 rounds. Level-1 players pick 50, so I go lower.", 50.0),
        ("Your background:\n1. I am a male, 2. I am a male, 3. I am a female, 13.", 13.0),
        ("The average is 50, so two thirds of it is 33.", 33.0),
        ("If the answer is 50, then the target is 33. Let's say 22 is the answer.", 22.0),
        ("What a question. I've got a team of 3, and I'm always ready to try.", 3.0),
    ],
)
def test_numbers_that_are_not_a_stated_answer(text, loose):
    value, status = parse_answer(text, 0, 100, "last", stated_only=True)
    assert status is Status.NO_NUMBER and math.isnan(value)
    value, status = parse_answer(text, 0, 100, "last")  # without extraction: a number if any
    if loose is None:
        assert status is Status.NO_NUMBER
    else:
        assert (value, status) == (loose, Status.OK)


def test_a_stated_answer_out_of_range_is_still_the_answer():
    text = 'Think of it step by step, then end with "ANSWER: 2008".\nThe winner is whoever...'
    assert parse_answer(text, 0, 100, "last", stated_only=True) == (2008.0, Status.OUT_OF_RANGE)


def test_direct_answers_state_their_number_first():
    text = "33, since two thirds of 50 is about 33. Others may say 22."
    assert parse_answer(text, 0, 100, "first", stated_only=True) == (33.0, Status.OK)
    assert parse_answer("24 players are in the game. I choose 40.", 0, 100, "first") == (
        40.0,
        Status.OK,
    )
    text = "1. Think about the others.\n2. Go lower."  # a list, not a leading answer
    assert parse_answer(text, 0, 100, "first", stated_only=True)[1] is Status.NO_NUMBER


def test_the_first_stated_answer_wins_in_direct_answers():
    text = "My guess is 21. If everyone guessed 21, the answer would be 14."
    assert parse_answer(text, 0, 100, "first") == (21.0, Status.OK)


def test_parse_answers_passes_stated_only():
    texts = ["42", "ANSWER: 7", "2/3 of 50 is 33.", None]
    guesses, statuses = parse_answers(texts, [None] * 4, 0, 100, "last", stated_only=True)
    assert statuses.tolist() == ["ok", "ok", "no_number", "no_number"]
    np.testing.assert_array_equal(guesses, [42.0, 7.0, np.nan, np.nan])
