import pytest

from workbench.config import GameSpec, PromptSpec
from workbench.game import (
    answer_prefer,
    first_question,
    format_number,
    format_ratio,
    next_question,
    parse_answer,
    rules_text,
)

PERSONA_A = "A 34-year-old nurse from Lyon."
PERSONA_B = "A retired engineer who loves chess."


def _game(**prompt) -> GameSpec:
    return GameSpec(prompt=PromptSpec(**prompt))


@pytest.mark.parametrize(
    ("x", "text"), [(0.0, "0"), (100.0, "100"), (33.3333, "33.33"), (-0.001, "0"), (2.5, "2.5")]
)
def test_format_number(x, text):
    assert format_number(x) == text


@pytest.mark.parametrize(
    ("r", "text"),
    [(2 / 3, "2/3"), (0.51, "51/100"), (0.5, "1/2"), (1.0, "1"), (0.123456, "0.1235")],
)
def test_format_ratio(r, text):
    assert format_ratio(r) == text


def test_rules_text_describes_the_game():
    text = rules_text(GameSpec(ratio="2/3", low=0, high=100), 1000)
    assert "1,000 players" in text
    assert "from 0 to 100" in text
    assert "2/3 of the average" in text
    assert "0.0" not in text


def test_rules_text_ratio_051_is_a_fraction():
    assert "51/100 of the average" in rules_text(GameSpec(ratio=0.51), 10)


def test_rules_text_offset_variant_mentions_the_offset():
    assert "5 plus 1/2 of the average" in rules_text(GameSpec(ratio=0.5, offset=5), 10)
    assert "1/2 of the average minus 5" in rules_text(GameSpec(ratio=0.5, offset=-5), 10)


def test_rules_text_is_shared_and_has_no_persona():
    game = _game(persona=True)
    # the agents layer builds the system message once per run; personas only reach questions
    system = rules_text(game, 50)
    assert PERSONA_A not in system and PERSONA_B not in system
    assert first_question(game, PERSONA_A) != first_question(game, PERSONA_B)
    assert rules_text(game, 50) == system


def test_persona_in_first_question_only_when_enabled():
    assert PERSONA_A in first_question(_game(persona=True), PERSONA_A)
    assert PERSONA_A not in first_question(_game(persona=False), PERSONA_A)
    assert "background" not in first_question(_game(persona=True), None)


@pytest.mark.parametrize(
    ("flag", "phrase"),
    [
        ("rational_note", "rational"),
        ("strategy_note", "predict what the others"),
        ("famous_game_note", "well-known"),
    ],
)
def test_each_note_changes_the_rules_text(flag, phrase):
    plain, noted = rules_text(_game(), 10), rules_text(_game(**{flag: True}), 10)
    assert phrase not in plain
    assert phrase in noted


def test_population_note_needs_flag_and_text():
    note = "60% are engineers, 40% are teachers."
    assert note in rules_text(_game(population_note=True), 10, note)
    assert note not in rules_text(_game(population_note=False), 10, note)
    assert rules_text(_game(population_note=True), 10) == rules_text(_game(), 10)


def test_answer_instruction_by_style():
    direct = rules_text(_game(style="direct"), 10)
    steps = rules_text(_game(style="step_by_step"), 10)
    assert "number only" in direct and "ANSWER:" not in direct
    assert "step by step" in steps and '"ANSWER: <number>"' in steps


def test_paper_prompts_give_four_distinct_system_texts():
    texts = {rules_text(GameSpec(prompt=PromptSpec.paper(k)), 100) for k in (1, 2, 3, 4)}
    assert len(texts) == 4


def test_answer_prefer_matches_style_and_parses_the_requested_format():
    steps = _game(style="step_by_step")
    assert answer_prefer(_game(style="direct")) == "first"
    assert answer_prefer(steps) == "last"
    reply = "Level 1 picks 33, level 2 picks 22.\nANSWER: 15"
    assert parse_answer(reply, 0, 100, answer_prefer(steps))[0] == 15.0


def test_multi_round_text_names_rounds():
    game = GameSpec(rounds=3)
    assert "3 rounds" in rules_text(game, 10)
    assert "Round 1 of 3" in first_question(game, None)
    assert "Round" not in first_question(GameSpec(), None)


def test_next_question_tells_target_and_own_guess():
    game = GameSpec(rounds=3)
    text = next_question(game, 2, 33.3333, 40.0)
    assert "round 1" in text and "33.33" in text and "You chose 40" in text
    assert "Round 2 of 3" in text
    assert "You chose" not in next_question(game, 3, 20.0, None)


def test_next_question_without_valid_guesses():
    assert "nobody won" in next_question(GameSpec(rounds=2), 2, float("nan"), None)


def test_next_question_rejects_round_one():
    with pytest.raises(ValueError, match="round 2 or later, got round 1"):
        next_question(GameSpec(), 1, 10.0, None)


def test_rules_text_rejects_no_players():
    with pytest.raises(ValueError, match="n_players must be at least 1, got 0"):
        rules_text(GameSpec(), 0)
