"""The texts agents see, in our own words.

The system message (`rules_text`) is identical for every agent of a run and comes first, so
servers with prefix caching share it; agent-specific text (the persona) goes in the first user
message, after the round's shared question. A round's chat is two messages: the system rules and
one user message (`user_message`) that carries the winning numbers so far (shared), then the
agent's background and its own earlier numbers (its memory). Everything shared by many agents
comes before what is not, so a prefix cache reuses the most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

from workbench.config import GameSpec
from workbench.game.parse import ANSWER_MARKER

FRACTION_TOLERANCE = 1e-9
"""How close a ratio must be to a fraction (denominator <= 100) to be written as one."""


def format_number(x: float, digits: int = 2) -> str:
    """`x` rounded to `digits` decimals without trailing zeros: 0 -> "0", 33.333 -> "33.33"."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".") if digits > 0 else f"{x:.0f}"
    return "0" if text == "-0" else text


def format_ratio(r: float) -> str:
    """A ratio as a simple fraction when it is one (2/3, 51/100, 1), else as a decimal."""
    fraction = Fraction(r).limit_denominator(100)
    if abs(float(fraction) - r) > FRACTION_TOLERANCE:
        return format_number(r, digits=4)
    return str(fraction)


def _share_of_average(ratio: float) -> str:
    """ "2/3 of the average", "0.6667 times the average" or "the average" (ratio 1)."""
    text = format_ratio(ratio)
    if text == "1":
        return "the average"
    return f"{text} {'of' if '/' in text else 'times'} the average"


def _target_phrase(game: GameSpec) -> str:
    """How the target is computed, in words, e.g. "5 plus 1/2 of the average"."""
    share = _share_of_average(game.ratio)
    if game.offset > 0:
        return f"{format_number(game.offset)} plus {share}"
    if game.offset < 0:
        return f"{share} minus {format_number(-game.offset)}"
    return share


def _answer_instruction(game: GameSpec) -> str:
    """How to reply, by prompt style."""
    if game.prompt.style == "direct":
        return "Reply with your number only, without any other words."
    return (
        "Think it through step by step, then end your reply with a last line of the form "
        f'"{ANSWER_MARKER}: <number>".'
    )


def _reminder(game: GameSpec) -> str:
    """A one-line reminder of the reply format, repeated in every question for small models."""
    if game.prompt.style == "direct":
        return "Reply with the number only."
    return f'Think step by step and finish with "{ANSWER_MARKER}: <number>".'


def _round_label(game: GameSpec, round_number: int) -> str:
    """ "Round 2 of 5. " in multi-round games, nothing in a one-round game."""
    return f"Round {round_number} of {game.rounds}. " if game.rounds > 1 else ""


def rules_text(game: GameSpec, n_players: int, population_note: str | None = None) -> str:
    """The system message shared by every agent: the rules, the variant's notes, reply format.

    `population_note` is included only when `game.prompt.population_note` is on.
    """
    if n_players < 1:
        raise ValueError(f"n_players must be at least 1, got {n_players}")
    low, high = format_number(game.low), format_number(game.high)
    who = "the only player" if n_players == 1 else f"one of {n_players:,} players"
    lines = [
        f"You are {who} in a number-choosing game.",
        f"Each player privately chooses a number from {low} to {high}, both included.",
        "Once everyone has chosen, the average of all chosen numbers is taken. The winner is "
        f"whoever chose the number closest to {_target_phrase(game)}; if several players are "
        "equally close, they all win.",
    ]
    if game.rounds > 1:
        lines.append(
            f"The game is played for {game.rounds} rounds. After each round you are told the "
            "winning number."
        )
    spec = game.prompt
    if spec.famous_game_note:
        lines.append('This is a variant of the well-known "guess 2/3 of the average" game.')
    if spec.rational_note:
        lines.append("Every player in this game, you included, is perfectly rational.")
    if spec.strategy_note:
        lines.append(
            "Every player tries to predict what the others will choose and plans accordingly."
        )
    if spec.population_note and population_note:
        lines.append(f"Who the players are: {population_note.strip()}")
    lines.append(_answer_instruction(game))
    return "\n".join(lines)


def round_question(game: GameSpec, round_number: int, previous_targets: Sequence[float]) -> str:
    """The shared start of a round's user message: the winning numbers so far, then the question.

    Identical for every agent of a round, so it comes before anything agent-specific.
    """
    if round_number < 1 or len(previous_targets) != round_number - 1:
        raise ValueError(
            f"round {round_number} needs {max(round_number - 1, 0)} previous targets, "
            f"got {len(previous_targets)}"
        )
    lines = []
    if previous_targets:
        results = "; ".join(
            f"round {r}: "
            + (format_number(t) if not math.isnan(t) else "no valid numbers, nobody won")
            for r, t in enumerate(previous_targets, start=1)
        )
        lines.append(f"Winning numbers ({_target_phrase(game)}) so far: {results}.")
    if game.prompt.announcement:
        lines.append(f"Announcement to all players: {game.prompt.announcement.strip()}")
    now = " now" if previous_targets else ""
    lines.append(
        f"{_round_label(game, round_number)}Which number do you choose{now}? {_reminder(game)}"
    )
    return "\n".join(lines)


def agent_context(game: GameSpec, persona: str | None, own_guesses: Sequence[float]) -> str:
    """The agent-specific end of the message: its background (when enabled), then its earlier
    numbers in round order ("Your own numbers so far: 40, 25.5.")."""
    lines = []
    if game.prompt.persona and persona:
        lines.append(f"Your background: {persona.strip()}")
    if len(own_guesses):
        # in round order without "round r:" labels: each agent evaluates this line itself, so
        # every token here is paid once per agent and round (22 tokens against 14 by round 3)
        chosen = ", ".join(
            format_number(g) if not math.isnan(g) else "no valid number" for g in own_guesses
        )
        lines.append(f"Your own numbers so far: {chosen}.")
    return "\n".join(lines)


def user_message(
    game: GameSpec,
    round_number: int,
    previous_targets: Sequence[float],
    persona: str | None,
    own_guesses: Sequence[float],
) -> str:
    """A round's whole user message: the shared question first, then the agent's own context."""
    shared = round_question(game, round_number, previous_targets)
    own = agent_context(game, persona, own_guesses)
    return f"{shared}\n{own}" if own else shared


def answer_prefer(game: GameSpec) -> Literal["first", "last"]:
    """Which number `parse_answer` should take: the first for direct answers, else the last."""
    return "first" if game.prompt.style == "direct" else "last"
