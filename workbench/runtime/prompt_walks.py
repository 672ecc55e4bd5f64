"""A round's distinct prompts, each walked whole: what the estimate and exact group
distributions read.

Agents are grouped as distribution mode groups them, one chat per group
(`agents.prompts.Prompts.grouped`, from the config alone), tokenized by the model, and each
prompt's whole answer trie is walked once (`distribution.whole_walk.answer_walk`), in the order the
driver walks prompts (sorted, so each shares the most with the one before).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.errors import ConfigError
from workbench.llm.base import SamplingParams
from workbench.llm.distribution.scorer import NodeScorer
from workbench.llm.distribution.whole_walk import ExactWalk, answer_walk
from workbench.results import Bundle


@dataclass(frozen=True)
class PromptWalks:
    """One round's prompts: each agent's prompt (`codes`), each prompt's first agent (a
    position into the shard) and agents (`sizes`), tokens and whole walk, and the order they
    were walked in."""

    codes: np.ndarray
    firsts: np.ndarray
    sizes: np.ndarray
    tokens: list[tuple[int, ...]]
    walks: list[ExactWalk]
    order: list[int]


async def walk_prompts(
    prompts: Prompts,
    shard: AgentShard,
    ctx: RoundContext,
    scorer: NodeScorer | None,
    params: SamplingParams,
) -> PromptWalks:
    """Group the shard's agents by prompt and walk each distinct prompt's whole trie on
    `scorer` (the model's, or another evaluation of the same model) under `params`."""
    if scorer is None or not prompts.constrained:
        raise ConfigError(
            "model.sampling: whole answer distributions need distribution mode (sampling auto "
            "or workbench on a model that supports it, constrained answers)"
        )
    grouped = prompts.grouped(shard, ctx)
    tokens = await scorer.prompt_tokens(grouped.chats)
    constraint = grouped.chats[0].constraint
    assert constraint is not None and constraint.integer_range is not None
    vocab = await scorer.vocabulary(*constraint.integer_range)
    order = sorted(range(len(tokens)), key=tokens.__getitem__)
    walks: list[ExactWalk] = [ExactWalk()] * len(tokens)
    for index in order:
        walks[index] = await answer_walk(scorer, tokens[index], vocab, params)
    firsts = np.array([m[0] for m in grouped.members], dtype=np.int64)
    return PromptWalks(grouped.codes, firsts, grouped.sizes, list(tokens), walks, order)


def bundle_round(
    bundle: Bundle, number: int, responses: pd.DataFrame
) -> tuple[AgentShard, RoundContext]:
    """Round `number` of a finished `bundle` as its agents met it: one shard of every agent with
    its memory of the rounds before restored from `responses` (the bundle's), and the round's
    context with the bundle's targets so far and the game it was played in (a fork's own)."""
    shard = AgentShard(0, bundle.personas(), bundle.config.game.rounds)
    shard.restore(responses[responses["round"] < number])
    targets = tuple(float(t) for t in bundle.rounds()["target"].iloc[: number - 1])
    return shard, RoundContext.of(bundle.config, number, targets, game=bundle.game_of(number))


def distinct_prefix_tokens(prompts: Sequence[Sequence[int]]) -> int:
    """Tokens an engine evaluates for these prompts when prompts share their common prefixes
    (each distinct prefix once)."""
    ordered = sorted(tuple(p) for p in prompts)
    total, before = 0, ()
    for prompt in ordered:
        total += len(prompt) - common_prefix(before, prompt)
        before = prompt
    return total


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens two prompts share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n
