"""The "guess p of the average" game: rules, answer parsing and prompt texts (pure logic)."""

from workbench.game.parse import ANSWER_MARKER, STATUS_DTYPE, Status, parse_answer, parse_answers
from workbench.game.prompts import (
    answer_prefer,
    first_question,
    format_number,
    format_ratio,
    next_question,
    rules_text,
)
from workbench.game.rules import (
    TIE_TOLERANCE,
    WITHIN,
    RoundStats,
    equilibrium,
    round_stats,
    target,
    winners,
)

__all__ = [
    "ANSWER_MARKER",
    "STATUS_DTYPE",
    "TIE_TOLERANCE",
    "WITHIN",
    "RoundStats",
    "Status",
    "answer_prefer",
    "equilibrium",
    "first_question",
    "format_number",
    "format_ratio",
    "next_question",
    "parse_answer",
    "parse_answers",
    "round_stats",
    "rules_text",
    "target",
    "winners",
]
