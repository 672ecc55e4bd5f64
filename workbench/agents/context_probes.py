"""The longest prompts a run can send, built before it starts, so a model can say they cannot fit.

A prompt grows each round: the winning numbers so far and the agent's own earlier numbers join
it. Before a run writes anything, `probe_requests` builds, with the run's own `Prompts`, the
prompts of the agents with the longest persona texts (per model of a mix): in round 1, and in
the last round with a history of the longest numbers the game can produce, or of invalid rounds
("no valid number"), whichever tokenizes longer; and, when the policy makes the extraction call,
that call over an answer of `max_tokens` numbers. Numbers are written with two decimals at
most (`format_number`), so the longest has the most integer digits, a sign and two decimals.
"""

from __future__ import annotations

import math

import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, LLMPolicySpec, RunConfig
from workbench.game.prompts import format_number
from workbench.llm.base import ChatRequest, SamplingParams

__all__ = ["longest_number", "probe_requests"]

LONGEST_PERSONAS = 3
"""Agents probed per model: those with the longest persona texts (characters are a close, not
exact, measure of tokens)."""


def longest_number(game: GameSpec) -> float:
    """A number as long as any guess or target of `game` can be written: the largest magnitude
    a guess (within [low, high]) or a target (offset + ratio x a mean) reaches, with a sign
    when one is possible, and two decimals."""
    ends = [game.low, game.high, game.offset + game.ratio * game.low]
    ends.append(game.offset + game.ratio * game.high)
    magnitude = math.floor(max(abs(x) for x in ends)) + 0.67
    return -magnitude if min(ends) < 0 else magnitude


def probe_requests(
    config: RunConfig,
    personas: pd.DataFrame,
    params: SamplingParams,
) -> list[ChatRequest]:
    """The run's worst-case chats (see the module); none for a policy that asks no model."""
    if not isinstance(config.policy, LLMPolicySpec):
        return []
    game = config.game
    prompts = Prompts.of(config)
    shard = AgentShard(0, _longest_personas(personas), game.rounds)
    first = RoundContext.of(config)
    requests = prompts.chats(shard, first)
    last = game.rounds
    for fill in (longest_number(game), math.nan):
        shard.guesses[:, :] = fill
        history = (fill,) * (last - 1)
        ctx = RoundContext.of(config, last, history)
        requests += prompts.chats(shard, ctx)
    if prompts.extract_number != "never":
        answer = " ".join([format_number(longest_number(game))] * params.max_tokens)
        requests += [prompts.extraction(r, answer, first) for r in requests]
    return requests


def _longest_personas(personas: pd.DataFrame) -> pd.DataFrame:
    """The agents with the longest persona texts, LONGEST_PERSONAS per model of a mix."""
    if "persona" not in personas:
        return personas.head(1)
    lengths = pd.DataFrame(
        {
            "length": personas["persona"].astype(str).str.len().to_numpy(),
            "model": personas["model"].astype(str).to_numpy() if "model" in personas else "",
        }
    )
    longest = lengths.sort_values("length", ascending=False, kind="stable")
    rows = longest.groupby("model", sort=False).head(LONGEST_PERSONAS).index
    return personas.iloc[sorted(rows)]
