"""What LLM agents are asked, from the config alone: a shard's chats and its distinct prompts.

No model is needed to build a round's prompts: the rules and round question are shared, and
each agent adds its persona, its model (in a mix) and its own earlier guesses. `Prompts.of(config)`
builds them as the run does; the run's policy (`agents.policies.LLMPolicy`), the estimate, the
exact distributions, the probes of the longest prompts and the benches all read them here.

Agents are grouped by everything their prompt is made of, as columns, before any prompt is
built (`prompt_groups`): one chat per group in distribution mode (`Prompts.grouped`), one per
agent otherwise (`Prompts.each`, groups of one), so a decision reads both the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.agents import streams
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import ExtractNumber, LLMPolicySpec, RunConfig, extract_mode
from workbench.game import rules_text, user_message
from workbench.llm.base import ChatRequest, OutputConstraint


@dataclass(frozen=True)
class ShardPrompts:
    """A shard's round as prompts: each agent's group (`codes`, a position into `chats`), each
    group's chat (built from its first agent) and its agents' positions (`members`)."""

    ids: np.ndarray
    codes: np.ndarray
    chats: list[ChatRequest]
    members: list[np.ndarray]

    @property
    def sizes(self) -> np.ndarray:
        """How many agents share each chat."""
        return np.bincount(self.codes, minlength=len(self.chats))


@dataclass(frozen=True)
class Prompts:
    """How a run's LLM agents are asked: constrained to whole numbers in the game's range or
    free text, and whether the paper's extraction call follows (`extract_number`)."""

    constrained: bool = True
    extract_number: ExtractNumber = "never"

    @classmethod
    def of(cls, config: RunConfig) -> Prompts:
        """The prompts of `config`'s runs (an LLM policy's extraction setting, else never)."""
        policy = config.policy
        extract = policy.extract_number if isinstance(policy, LLMPolicySpec) else "never"
        return cls(config.model.constrained, extract_mode(extract))

    def chats(
        self, shard: AgentShard, ctx: RoundContext, rows: np.ndarray | None = None
    ) -> list[ChatRequest]:
        """Each agent's chat (or only the agents at positions `rows`): the shared rules and round
        question, then its persona and memory."""
        game = ctx.game
        system = {"role": "system", "content": rules_text(game, ctx.n_players, ctx.population_note)}
        picked = slice(None) if rows is None else rows
        ids = shard.agent_ids[picked]
        personas = column_text(shard, "persona", rows, len(ids))
        models = column_text(shard, "model", rows, len(ids))
        own = shard.guesses[picked, : ctx.round - 1].tolist()
        seeds = streams.request_seeds(ctx.seed, ids, ctx.round).tolist()
        constraint = None
        if self.constrained:
            constraint = OutputConstraint(
                integer_range=(int(np.ceil(game.low)), int(np.floor(game.high)))
            )
        targets = ctx.previous_targets
        return [
            ChatRequest(
                (system, {"role": "user", "content": user_message(game, ctx.round, targets, p, g)}),
                seed=seed,
                constraint=constraint,
                agent_id=agent,
                round=ctx.round,
                model=model,
            )
            for p, g, seed, agent, model in zip(
                personas, own, seeds, ids.tolist(), models, strict=True
            )
        ]

    def grouped(self, shard: AgentShard, ctx: RoundContext) -> ShardPrompts:
        """One chat per distinct prompt (distribution mode), built from its first agent."""
        codes, firsts = prompt_groups(shard, ctx)
        chats = self.chats(shard, ctx, rows=firsts)
        return ShardPrompts(shard.agent_ids, codes, chats, members_of(codes, len(firsts)))

    def each(self, shard: AgentShard, ctx: RoundContext) -> ShardPrompts:
        """One chat per agent (one generation each), as groups of one."""
        positions = np.arange(len(shard), dtype=np.int64)
        chats = self.chats(shard, ctx)
        return ShardPrompts(
            shard.agent_ids, positions, chats, [positions[i : i + 1] for i in positions]
        )

    def extraction(self, chat: ChatRequest, answer: str, ctx: RoundContext) -> ChatRequest:
        """The paper's second call: which number did this free-form answer choose?"""
        game = ctx.game
        question = (
            "Here is a player's answer in a number-choosing game. Which number between "
            f"{game.low:g} and {game.high:g} did the player finally choose? Reply with that "
            f"number only.\n\nAnswer:\n{answer}"
        )
        low, high = int(np.ceil(game.low)), int(np.floor(game.high))
        return ChatRequest(
            ({"role": "user", "content": question},),
            seed=chat.seed + 1,
            constraint=OutputConstraint(integer_range=(low, high)),
            agent_id=chat.agent_id,
            round=chat.round,
            model=chat.model,
            step="extract",
        )


def prompt_groups(shard: AgentShard, ctx: RoundContext) -> tuple[np.ndarray, np.ndarray]:
    """(each agent's group, each group's first agent position): agents share a group exactly
    when everything their own prompt is made of is equal."""
    columns: dict[str, np.ndarray] = {}
    for name in ("persona", "model"):
        if name in shard.personas:
            values = shard.personas[name]
            categorical = isinstance(values.dtype, pd.CategoricalDtype)
            columns[name] = values.cat.codes.to_numpy() if categorical else pd.factorize(values)[0]
    history = shard.guesses[:, : ctx.round - 1]
    for j in range(history.shape[1]):
        columns[f"round {j + 1}"] = history[:, j]
    if not columns:
        return np.zeros(len(shard), dtype=np.int64), np.zeros(min(1, len(shard)), dtype=np.int64)
    frame = pd.DataFrame(columns)
    codes = frame.groupby(list(columns), sort=False, dropna=False).ngroup().to_numpy(np.int64)
    _, firsts = np.unique(codes, return_index=True)
    return codes, firsts


def members_of(codes: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """The agent positions of each group, ascending."""
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=n_groups))[:-1]
    return np.split(order, bounds)


def column_text(
    shard: AgentShard, name: str, rows: np.ndarray | None, n: int
) -> list[str] | list[None]:
    """A persona column's values as text, for every agent or only those at `rows`; None for
    each agent when the shard has no such column."""
    if name not in shard.personas:
        return [None] * n
    column = shard.personas[name]
    picked = column if rows is None else column.iloc[rows]
    return picked.astype(str).tolist()
