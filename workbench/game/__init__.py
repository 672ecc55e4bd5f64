"""The "guess p of the average" game: rules, answer parsing and prompt texts (pure logic)."""

from workbench.game.parse import ANSWER_MARKER, STATUS_DTYPE, Status, parse_answer, parse_answers
from workbench.game.prompts import (
    agent_context,
    answer_prefer,
    format_number,
    format_ratio,
    round_question,
    rules_text,
    user_message,
)
from workbench.game.rules import (
    FAILED_STATUSES,
    ROUND_STAT_FIELDS,
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
    "FAILED_STATUSES",
    "ROUND_STAT_FIELDS",
    "STATUS_DTYPE",
    "TIE_TOLERANCE",
    "WITHIN",
    "RoundStats",
    "Status",
    "answer_prefer",
    "equilibrium",
    "agent_context",
    "format_number",
    "format_ratio",
    "round_question",
    "user_message",
    "parse_answer",
    "parse_answers",
    "round_stats",
    "rules_text",
    "target",
    "winners",
]
