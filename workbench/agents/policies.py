"""Batch policies: how a whole shard of agents picks its guesses for one round.

`await policy.act(shard, ctx)` returns one decisions table for the shard. Every policy draws its
randomness from counter-based streams keyed by (run seed, agent id, round), so results do not
depend on sharding or on the backend.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.agents import streams
from workbench.agents.distribution import act_by_distribution
from workbench.agents.shard import AgentShard, RoundContext, decisions_table
from workbench.config import (
    ExtractNumber,
    GameSpec,
    LevelKPolicySpec,
    RandomPolicySpec,
    extract_mode,
)
from workbench.game import (
    Status,
    answer_prefer,
    parse_answers,
    rules_text,
    user_message,
)
from workbench.llm.base import (
    ChatRequest,
    ChatResult,
    OutputConstraint,
    SamplingParams,
    with_extraction,
)
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


def _column_text(column: pd.Series, rows: np.ndarray | None) -> list[str]:
    """A persona column's values as text, for every agent or only those at `rows`."""
    picked = column if rows is None else column.iloc[rows]
    return picked.astype(str).tolist()


def _draw(u: np.ndarray, shares: dict[int, float]) -> np.ndarray:
    """Inverse-CDF draw of depths from a {depth: share} table."""
    depths = np.array(sorted(shares), dtype=np.int64)
    cdf = np.cumsum([shares[d] for d in depths])
    cdf[-1] = 1.0
    return depths[np.minimum(np.searchsorted(cdf, u, side="right"), len(depths) - 1)]


class LLMPolicy:
    """Agents ask a chat model: prompts built as a batch, one batched call, answers parsed.

    `extract_number` (the paper's second call, "which number did this answer choose?"):
    "never"; "fallback" for answers that state no answer (parsed with `stated_only`, so a stray
    number in the reasoning is never taken); "always" for every answer (the paper's protocol).
    True and False read as "fallback" and "never". Whenever the extraction call is made, it
    decides the agent's guess and status, its failure included (a timed-out extraction is a
    timeout), and the stored raw holds both texts (`with_extraction`; a failed extraction's
    error text in the brackets). Failed answers and blank ones are never sent to it: there is
    nothing to extract, and a constrained extraction of nothing would invent a number.
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
        self.constrained = constrained
        self.extract_number = extract_mode(extract_number)
        self.counts = TrieCounts()  # what distribution mode did, over every round so far

    def requests(
        self, shard: AgentShard, ctx: RoundContext, rows: np.ndarray | None = None
    ) -> list[ChatRequest]:
        """Each agent's chat (or only the agents at positions `rows`): the shared rules and round
        question, then its persona and memory."""
        game = ctx.game
        system = {"role": "system", "content": rules_text(game, ctx.n_players, ctx.population_note)}
        picked = slice(None) if rows is None else rows
        ids = shard.agent_ids[picked]
        personas = (
            _column_text(shard.personas["persona"], rows)
            if "persona" in shard.personas
            else [None] * len(ids)
        )
        own = shard.guesses[picked, : ctx.round - 1].tolist()
        seeds = streams.request_seeds(ctx.seed, ids, ctx.round).tolist()
        constraint = None
        if self.constrained:
            constraint = OutputConstraint(
                integer_range=(int(np.ceil(game.low)), int(np.floor(game.high)))
            )
        targets = ctx.previous_targets
        models = (
            _column_text(shard.personas["model"], rows)
            if "model" in shard.personas
            else [None] * len(ids)
        )
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

    @property
    def distribution(self) -> bool:
        """Whether answers are drawn in distribution mode: constrained integer answers from a
        model that supports it (`model.sampling`); free text is one generation per agent."""
        return self.constrained and self.model.draws_answers()

    async def act(self, shard: AgentShard, ctx: RoundContext) -> pa.Table:
        """One batched model call for the shard, every answer parsed with a status, then one
        batched extraction call for the answers `extract_number` sends to it; in distribution
        mode, one draw per distinct prompt (`agents.distribution`)."""
        if self.distribution:
            return await act_by_distribution(self, shard, ctx)
        requests = self.requests(shard, ctx)
        results = await self.model.generate(requests, self.params)
        texts = [r.text for r in results]
        guesses, statuses = parse_answers(
            texts,
            [r.error_kind for r in results],
            ctx.game.low,
            ctx.game.high,
            prefer=answer_prefer(ctx.game),
            stated_only=self.extract_number == "fallback",
        )
        raw = [r.text if r.error is None else r.error for r in results]
        latency = np.array([r.latency_s for r in results])
        prompt_tokens = np.array([r.prompt_tokens for r in results])
        completion_tokens = np.array([r.completion_tokens for r in results])
        extracted = np.zeros(len(results), dtype=bool)
        todo = self._to_extract(results, statuses)
        if len(todo):
            answers = await self.model.generate(
                [self.extraction_request(requests[i], texts[i] or "", ctx) for i in todo],
                self.params,
            )
            again, again_status = parse_answers(  # read as a direct answer: its first number
                [r.text for r in answers],
                [r.error_kind for r in answers],
                ctx.game.low,
                ctx.game.high,
            )
            guesses[todo], statuses[todo], extracted[todo] = again, again_status, True
            for i, answer in zip(todo.tolist(), answers, strict=True):  # the agent's cost too
                latency[i] += answer.latency_s
                prompt_tokens[i] += answer.prompt_tokens
                completion_tokens[i] += answer.completion_tokens
                said = answer.text if answer.error is None else answer.error
                raw[i] = with_extraction(raw[i], said or "")
        return decisions_table(
            shard.agent_ids,
            ctx.round,
            guesses,
            statuses,
            raw=raw,
            latency_s=latency,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            extracted=extracted,
        )

    def _to_extract(self, results: list[ChatResult], statuses: np.ndarray) -> np.ndarray:
        """Indices of the answers the extraction call decides: none (never), those that state
        no answer (fallback) or all (always); never a failed or a blank answer."""
        if self.extract_number == "never":
            return np.array([], dtype=np.int64)
        wanted = statuses == Status.NO_NUMBER if self.extract_number == "fallback" else True
        answered = np.array(
            [r.error is None and bool(r.text and r.text.strip()) for r in results], dtype=bool
        )
        return np.flatnonzero(answered & wanted)

    def extraction_request(
        self, request: ChatRequest, answer: str, ctx: RoundContext
    ) -> ChatRequest:
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
            seed=request.seed + 1,
            constraint=OutputConstraint(integer_range=(low, high)),
            agent_id=request.agent_id,
            round=request.round,
            model=request.model,
            step="extract",
        )
