"""Batch policies: how a whole shard of agents picks its guesses for one round.

`await policy.act(shard, ctx)` returns one decisions table for the shard. Every policy draws its
randomness from counter-based streams keyed by (run seed, agent id, round), so results do not
depend on sharding or on the backend.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import numpy as np
import pyarrow as pa

from workbench.agents import streams
from workbench.agents.draws import Ask, DrawnAnswers, GeneratedAnswers, decide
from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext, decisions_table
from workbench.config import (
    ExtractNumber,
    GameSpec,
    LevelKPolicySpec,
    RandomPolicySpec,
    extract_mode,
)
from workbench.game import Status
from workbench.llm.base import SamplingParams
from workbench.llm.chat_model import ChatModel, as_chat_model
from workbench.llm.distribution.walk import TrieCounts

# stream numbers: one per independent use of randomness
_GUESS, _DEPTH, _NOISE = 1, 2, 3


class Policy(Protocol):
    """Anything that turns a shard and a round context into a decisions table."""

    async def act(self, shard: AgentShard, ctx: RoundContext) -> pa.Table:
        """Decide every agent of `shard` for round `ctx.round`."""
        ...


def uniform_guesses(u: np.ndarray, game: GameSpec, integer: bool) -> np.ndarray:
    """Map uniforms in [0, 1) to guesses in [low, high] (whole numbers when `integer`)."""
    if integer:
        low, high = np.ceil(game.low), np.floor(game.high)
        return np.minimum(low + np.floor(u * (high - low + 1)), high)
    return game.low + u * (game.high - game.low)


class RandomPolicy:
    """The paper's dummy agent: wait the model latency (really awaited), then guess uniformly."""

    def __init__(self, spec: RandomPolicySpec | None = None) -> None:
        self.spec = spec or RandomPolicySpec()

    async def act(self, shard: AgentShard, ctx: RoundContext) -> pa.Table:
        """All agents of the shard wait together, as concurrent model calls would."""
        if self.spec.per_agent:
            await asyncio.gather(*(asyncio.sleep(self.spec.latency_s) for _ in range(len(shard))))
        elif self.spec.latency_s > 0:
            await asyncio.sleep(self.spec.latency_s)
        ids = shard.agent_ids
        u = streams.uniform(ctx.seed, ids, ctx.round, _GUESS)
        guesses = uniform_guesses(u, ctx.game, self.spec.integer)
        return decisions_table(ids, ctx.round, guesses, Status.OK, latency_s=self.spec.latency_s)


class LevelKPolicy:
    """Cognitive-hierarchy baseline: depth-0 agents guess uniformly; depth k best-responds.

    Round 1: depth 1 expects the range midpoint (the mean of uniform depth-0 play). Later rounds:
    depth 1 expects others to repeat the previous target, so play drifts to the equilibrium.
    `level_k` best-responds to depth k-1; `cognitive_hierarchy` to depths 0..k-1 weighted by
    the population's depth shares. Depths are drawn once per agent (round 0 stream).
    """

    def __init__(self, spec: LevelKPolicySpec | None = None) -> None:
        self.spec = spec or LevelKPolicySpec()

    def depths(self, shard: AgentShard, seed: int) -> np.ndarray:
        """Each agent's reasoning depth, from its attribute's share table when one applies."""
        u = streams.uniform(seed, shard.agent_ids, 0, _DEPTH)
        depth = _draw(u, self.spec.depth_shares)
        if self.spec.attribute is not None and self.spec.by_attribute:
            if self.spec.attribute not in shard.personas:
                raise ValueError(
                    f"policy.attribute: persona column {self.spec.attribute!r} does not exist; "
                    f"columns: {sorted(shard.personas.columns)}"
                )
            values = shard.personas[self.spec.attribute].astype(str).to_numpy()
            for category, table in self.spec.by_attribute.items():
                mask = values == category
                depth[mask] = _draw(u[mask], table)
        return depth

    def depth_guesses(self, game: GameSpec, anchor: float, max_depth: int) -> np.ndarray:
        """The guess of each depth 0..max_depth (depth 0's entry is its expected guess)."""
        values = [anchor]
        shares = self.spec.depth_shares
        for k in range(1, max_depth + 1):
            if self.spec.model == "level_k":
                expected = values[k - 1]
            else:
                weights = np.array([shares.get(j, 0.0) for j in range(k)])
                weights = weights if weights.sum() > 0 else np.ones(k)
                expected = float(np.dot(weights, values[:k]) / weights.sum())
            values.append(float(np.clip(game.offset + game.ratio * expected, game.low, game.high)))
        return np.array(values)

    async def act(self, shard: AgentShard, ctx: RoundContext) -> pa.Table:
        """Guesses for the shard: depth-0 uniform, deeper agents their depth's reply plus noise."""
        game, ids = ctx.game, shard.agent_ids
        depth = self.depths(shard, ctx.seed)
        previous = ctx.previous_target
        anchor = (game.low + game.high) / 2 if previous is None or np.isnan(previous) else previous
        table = self.depth_guesses(game, anchor, int(depth.max(initial=0)))
        guesses = table[depth]
        random_play = depth == 0
        u = streams.uniform(ctx.seed, ids, ctx.round, _GUESS)
        guesses[random_play] = uniform_guesses(u[random_play], game, integer=False)
        if self.spec.noise_sd > 0:
            noise = streams.normal(ctx.seed, ids, ctx.round, _NOISE) * self.spec.noise_sd
            guesses = np.where(random_play, guesses, guesses + noise)
        guesses = np.clip(guesses, game.low, game.high)
        raw = [f"depth={d}" for d in depth.tolist()] if len(ids) <= 100_000 else None
        return decisions_table(ids, ctx.round, guesses, Status.OK, raw=raw)


def _draw(u: np.ndarray, shares: dict[int, float]) -> np.ndarray:
    """Inverse-CDF draw of depths from a {depth: share} table."""
    depths = np.array(sorted(shares), dtype=np.int64)
    cdf = np.cumsum([shares[d] for d in depths])
    cdf[-1] = 1.0
    return depths[np.minimum(np.searchsorted(cdf, u, side="right"), len(depths) - 1)]


class LLMPolicy:
    """Agents ask a chat model: the round's prompts (`agents.prompts`), the model's answers
    (drawn in distribution mode, else one generation per agent) and one decision
    (`agents.draws.decide`).

    `extract_number` (the paper's second call, "which number did this answer choose?"):
    "never"; "fallback" for answers that state no answer (parsed with `stated_only`, so a stray
    number in the reasoning is never taken); "always" for every answer (the paper's protocol).
    True and False read as "fallback" and "never".
    """

    def __init__(
        self,
        model: ChatModel,
        params: SamplingParams | None = None,
        *,
        constrained: bool = True,
        extract_number: bool | ExtractNumber = "never",
    ) -> None:
        self.model = as_chat_model(model, "LLMPolicy(model=...)")
        self.params = params or SamplingParams()
        self.prompts = Prompts(constrained, extract_mode(extract_number))
        self.counts = TrieCounts()  # what distribution mode did, over every round so far

    @property
    def distribution(self) -> bool:
        """Whether answers are drawn in distribution mode: constrained integer answers from a
        model that supports it (`model.sampling`); free text is one generation per agent."""
        return self.prompts.constrained and self.model.draws_answers()

    async def act(self, shard: AgentShard, ctx: RoundContext) -> pa.Table:
        """Prompts, then the model's answers, then the decision: in distribution mode one
        chat per distinct prompt, its agents' answers drawn; otherwise one chat per agent."""
        ask: Ask
        if self.distribution:
            prompts = self.prompts.grouped(shard, ctx)
            ask = DrawnAnswers(self.model, self.params, ctx, self.counts)
        else:
            prompts = self.prompts.each(shard, ctx)
            ask = GeneratedAnswers(self.model, self.params)
        return await decide(prompts, ask, ctx, self.prompts)
