import pytest

from workbench.config import GameSpec, PromptSpec
from workbench.game import (
    agent_context,
    answer_prefer,
    format_number,
    format_ratio,
    parse_answer,
    round_question,
    rules_text,
    user_message,
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
    # the agents layer builds the system message once per run; personas only reach user messages
    system = rules_text(game, 50)
    assert PERSONA_A not in system and PERSONA_B not in system
    assert user_message(game, 1, (), PERSONA_A, ()) != user_message(game, 1, (), PERSONA_B, ())
    assert rules_text(game, 50) == system


def test_shared_question_comes_first_and_is_identical_across_personas():
    game = GameSpec(rounds=3)
    question = round_question(game, 2, (40.0,))
    a = user_message(game, 2, (40.0,), PERSONA_A, (55.0,))
    b = user_message(game, 2, (40.0,), PERSONA_B, (12.0,))
    assert a.startswith(question) and b.startswith(question)
    assert a.index(PERSONA_A) > len(question) and b.index(PERSONA_B) > len(question)
    assert PERSONA_A not in question and "55" not in question
    assert a == question + "\n" + agent_context(game, PERSONA_A, (55.0,))


def test_persona_in_user_message_only_when_enabled():
    assert PERSONA_A in user_message(_game(persona=True), 1, (), PERSONA_A, ())
    assert PERSONA_A not in user_message(_game(persona=False), 1, (), PERSONA_A, ())
    assert "background" not in user_message(_game(persona=True), 1, (), None, ())
    assert agent_context(_game(persona=True), None, ()) == ""
    assert agent_context(_game(persona=True), "", ()) == ""
    # without persona and memory the message is the shared question alone
    assert user_message(_game(persona=False), 1, (), PERSONA_A, ()) == round_question(
        _game(persona=False), 1, ()
    )


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
    assert "Round 1 of 3" in round_question(game, 1, ())
    assert "Round" not in round_question(GameSpec(), 1, ())


def test_later_rounds_tell_previous_targets_and_own_guesses():
    game = GameSpec(rounds=3)
    question = round_question(game, 3, (33.3333, 20.0))
    assert "round 1: 33.33" in question and "round 2: 20" in question
    assert "Round 3 of 3" in question
    assert "2/3 of the average" in question
    context = agent_context(game, None, (40.0, 25.5))
    assert context == "Your own numbers so far: 40, 25.5."
    assert "Your own numbers" not in agent_context(game, PERSONA_A, ())
    assert "Winning numbers" not in round_question(game, 1, ())


def test_round_without_valid_guesses():
    assert "nobody won" in round_question(GameSpec(rounds=2), 2, (float("nan"),))
    assert "no valid number" in agent_context(GameSpec(rounds=2), None, (float("nan"),))
    assert "nan" not in user_message(GameSpec(rounds=2), 2, (float("nan"),), None, (float("nan"),))


@pytest.mark.parametrize(("round_number", "targets"), [(1, (10.0,)), (2, ()), (3, (1.0,)), (0, ())])
def test_round_question_rejects_wrong_count_of_previous_targets(round_number, targets):
    with pytest.raises(ValueError, match=f"round {round_number} needs"):
        round_question(GameSpec(rounds=3), round_number, targets)
    with pytest.raises(ValueError, match=f"got {len(targets)}"):
        user_message(GameSpec(rounds=3), round_number, targets, PERSONA_A, ())


def test_rules_text_rejects_no_players():
    with pytest.raises(ValueError, match="n_players must be at least 1, got 0"):
        rules_text(GameSpec(), 0)


def test_an_announcement_reaches_every_agent_in_the_shared_question():
    said = "Game theory says the equilibrium is 0."
    game = _game(announcement=said)
    question = round_question(game, 2, [30.0])
    assert question.index(said) < question.index("Which number")  # before the question
    assert said not in round_question(_game(), 2, [30.0])
    assert said in user_message(game, 1, [], "a teacher", [])
    with pytest.raises(ValueError, match="announcement"):
        _game(announcement="x" * 501)
