"""The game's spec: the "guess p of the average" rules and which prompt variant agents see."""

from __future__ import annotations

import math
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from workbench.config.base import StrictModel, fraction_text, parse_number
from workbench.errors import ConfigError

GAME_BOUND = 1e12
"""Largest |low|, |high| and |offset|: beyond it the round statistics (mean, sd, target) lose
precision and, near 1e308, overflow to inf."""


class PromptSpec(StrictModel):
    """Which prompt variant the agents see (the paper's prompts 1-4 and its extra notes)."""

    style: Literal["direct", "step_by_step"] = Field(
        "direct",
        description="direct: answer with a number only (the paper's prompt 1); step_by_step: "
        "reason first, then give the number (prompts 2-4)",
    )
    rational_note: bool = Field(
        False, description="tell agents that all players are rational (the paper's prompt 3)"
    )
    strategy_note: bool = Field(
        False,
        description="tell agents that players guess each other's strategies (the paper's prompt 4)",
    )
    famous_game_note: bool = Field(
        False, description='note that this is a variant of the famous "2/3 of the average" game'
    )
    persona: bool = Field(
        True,
        description="include the agent's persona background; false: every agent reads the same",
    )
    population_note: bool = Field(
        False, description="tell agents how the population is composed (its dimensions' shares)"
    )
    announcement: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="a message every agent reads in each round's question, e.g. 'Game theory "
        "says the equilibrium is 0.' (what-if forks: from the round the fork starts at)",
    )

    @classmethod
    def paper(cls, number: int) -> PromptSpec:
        """The paper's prompt 1-4: direct, step by step, + rational players, + strategies."""
        if number not in (1, 2, 3, 4):
            raise ConfigError(f"paper prompt must be 1, 2, 3 or 4, got {number}")
        return cls(
            style="direct" if number == 1 else "step_by_step",
            rational_note=number >= 3,
            strategy_note=number >= 4,
        )


class GameSpec(StrictModel):
    """The "guess p of the average" game: target = offset + ratio * mean(valid guesses)."""

    FRACTIONS: ClassVar[tuple[str, ...]] = ("ratio", "offset", "low", "high")
    """The fields that accept a fraction written as text (`2/3`), and are shown as one."""

    ratio: float = Field(
        2 / 3,
        title="Ratio p",
        description="p, the share of the mean that is the target, in (0, 1]; fractions written "
        "as text like 2/3 are accepted (default 2/3, the classic game)",
    )
    offset: float = Field(
        0.0,
        allow_inf_nan=False,
        description=f"added to ratio * mean, |offset| <= {GAME_BOUND:.0e}; 5 with ratio 1/2 -> "
        "equilibrium 10",
    )
    low: float = Field(
        0.0,
        title="Lowest guess",
        allow_inf_nan=False,
        description=f"smallest allowed guess (inclusive), |low| <= {GAME_BOUND:.0e}; guesses "
        "below are invalid",
    )
    high: float = Field(
        100.0,
        title="Highest guess",
        allow_inf_nan=False,
        description=f"largest allowed guess (inclusive), greater than low, |high| <= "
        f"{GAME_BOUND:.0e}",
    )
    rounds: int = Field(
        1,
        ge=1,
        le=1000,
        description="rounds to play (1-1000); from round 2 agents see the previous rounds' results",
    )
    prompt: PromptSpec = Field(
        default_factory=PromptSpec,
        description="which prompt variant the agents see (style and optional notes)",
    )
    group_by: str | None = Field(
        None,
        description="a persona column (e.g. model, city) whose groups are sub-environments: "
        "each group's statistics are kept per round in groups.parquet; none: one environment",
    )

    @field_validator(*FRACTIONS, mode="before")
    @classmethod
    def _fractions(cls, value: Any) -> Any:
        return parse_number(value)

    @field_validator("ratio")
    @classmethod
    def _ratio_in_range(cls, value: float) -> float:
        if not (0 < value <= 1) or math.isnan(value):
            raise ValueError(f"must be in (0, 1], got {value}")
        return value

    @field_validator("offset", "low", "high")
    @classmethod
    def _bounded(cls, value: float) -> float:
        """Keep the round statistics finite: mean, sd and target of values this size fit."""
        if abs(value) > GAME_BOUND:
            raise ValueError(
                f"must be between -{GAME_BOUND:g} and {GAME_BOUND:g} (wider ranges overflow "
                f"the round statistics), got {value:g}"
            )
        return value

    def as_written(self) -> dict[str, Any]:
        """The game as JSON data with its fractions as text (`ratio: 2/3`): what a researcher
        wrote, and what loads back into an equal spec."""
        data = self.model_dump(mode="json")
        texts = {name: fraction_text(getattr(self, name)) for name in self.FRACTIONS}
        return data | {name: text for name, text in texts.items() if "/" in text}

    @model_validator(mode="after")
    def _range_ordered(self) -> GameSpec:
        if not self.low < self.high:
            raise ValueError(f"low must be < high, got low={self.low}, high={self.high}")
        return self
