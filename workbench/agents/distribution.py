"""Distribution mode for LLM agents: a shard's answers at the cost of its distinct prompts.

Agents are grouped by everything their prompt is made of (persona text, model, their own earlier
guesses; the rules and the round question are shared), as columns, before any prompt is built:
one prompt per group. The model draws every agent's answer through the answer trie
(`llm.distribution`), each agent with its own uniforms, a pure function of (seed, agent, round,
step); the answers are then parsed once per distinct answer and spread back to the agents. The
paper's extraction call, when it applies, is drawn the same way, one prompt per distinct answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.agents import streams
from workbench.agents.shard import AgentShard, RoundContext, decisions_table
from workbench.config import ExtractNumber
from workbench.game import Status, answer_prefer, parse_answers
from workbench.llm.base import ChatRequest, SamplingParams, with_extraction
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.walk import (
    EXTRACT_STREAM_OFFSET,
    STEP_STREAM,
    GroupAnswers,
    PromptGroup,
    TrieCounts,
)


class DrawingPolicy(Protocol):
    """What distribution mode asks of its policy (an `LLMPolicy`): the model and its sampling
    params, the round's requests, the extraction setting and request, and the counts it adds to."""

    model: ChatModel
    params: SamplingParams
    extract_number: ExtractNumber
    counts: TrieCounts

    def requests(
        self, shard: AgentShard, ctx: RoundContext, rows: np.ndarray | None = None
    ) -> list[ChatRequest]: ...

    def extraction_request(
        self, request: ChatRequest, answer: str, ctx: RoundContext
    ) -> ChatRequest: ...


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


@dataclass
class Draws:
    """One step's draws spread to agents: per agent the index of its answer (`leaf`); per
    answer its text, error, answer and prompt tokens, and the seconds its group took."""

    leaf: np.ndarray
    texts: list[str | None]
    errors: list[str | None]
    tokens: np.ndarray
    prompt_tokens: np.ndarray
    seconds: np.ndarray


def _spread(answers: Sequence[GroupAnswers], members: Sequence[np.ndarray], n: int) -> Draws:
    """The groups' answers as one table of distinct answers, and each agent's place in it."""
    leaf = np.zeros(n, dtype=np.int64)
    texts: list[str | None] = []
    errors: list[str | None] = []
    tokens: list[int] = []
    prompt_tokens: list[int] = []
    seconds: list[float] = []
    for group, who in zip(answers, members, strict=True):
        base = len(texts)
        if group.error is not None:
            leaf[who] = base
            texts.append(None)
            errors.append(group.error)
            tokens.append(0)
            count = 1
        else:
            leaf[who] = base + group.leaf
            texts.extend(group.texts)
            errors.extend([None] * len(group.texts))
            tokens.extend(group.tokens)
            count = len(group.texts)
        prompt_tokens.extend([group.prompt_tokens] * count)
        seconds.extend([group.seconds] * count)
    return Draws(
        leaf,
        texts,
        errors,
        np.asarray(tokens, dtype=np.int64),
        np.asarray(prompt_tokens, dtype=np.int64),
        np.asarray(seconds, dtype=np.float64),
    )


@dataclass(frozen=True)
class StepUniforms:
    """Each agent's uniform for its answer token at a depth: a pure function of (seed, agent,
    round, step), plain data so that it travels to a model actor on Ray."""

    seed: int
    round: int
    base: int

    def __call__(self, ids: np.ndarray, depth: int) -> np.ndarray:
        """The uniforms of agents `ids` for the token at `depth`."""
        return streams.uniform(self.seed, ids, self.round, self.base + depth)


async def _draw(
    policy: DrawingPolicy,
    requests: Sequence[ChatRequest],
    members: Sequence[np.ndarray],
    ids: np.ndarray,
    ctx: RoundContext,
    base: int,
) -> Draws:
    groups = [PromptGroup(r, ids[m]) for r, m in zip(requests, members, strict=True)]
    answers = await policy.model.draw_answers(
        groups, policy.params, StepUniforms(ctx.seed, ctx.round, base), policy.counts
    )
    return _spread(answers, members, len(ids))


def _parsed(draws: Draws, ctx: RoundContext, **options: object) -> tuple[np.ndarray, np.ndarray]:
    """(guesses, statuses) of every distinct answer."""
    kinds = [None if e is None else "model_error" for e in draws.errors]
    return parse_answers(draws.texts, kinds, ctx.game.low, ctx.game.high, **options)  # type: ignore[arg-type]


async def act_by_distribution(
    policy: DrawingPolicy, shard: AgentShard, ctx: RoundContext
) -> pa.Table:
    """The shard's decisions for the round in distribution mode (see the module docstring)."""
    ids = shard.agent_ids
    codes, firsts = prompt_groups(shard, ctx)
    members = members_of(codes, len(firsts))
    requests = policy.requests(shard, ctx, rows=firsts)
    answer = await _draw(policy, requests, members, ids, ctx, STEP_STREAM)
    guesses_l, statuses_l = _parsed(
        answer,
        ctx,
        prefer=answer_prefer(ctx.game),
        stated_only=policy.extract_number == "fallback",
    )
    raw_l = np.asarray(
        [t if e is None else e for t, e in zip(answer.texts, answer.errors, strict=True)],
        dtype=object,
    )
    leaf = answer.leaf
    guesses, statuses, raw = guesses_l[leaf], statuses_l[leaf], raw_l[leaf]
    latency = answer.seconds[leaf]
    prompt_tokens = answer.prompt_tokens[leaf]
    completion_tokens = answer.tokens[leaf]
    extracted = np.zeros(len(ids), dtype=bool)
    todo = _to_extract(policy, answer, statuses_l)
    if len(todo):
        # one extraction prompt per (distinct answer text, model): the agents that drew it ask it
        chosen = np.flatnonzero(np.isin(leaf, todo))
        models = pd.factorize(pd.Series([r.model or "" for r in requests]))[0]
        texts = pd.factorize(pd.Series([t or "" for t in answer.texts]))[0]
        key = texts[leaf[chosen]] * (int(models.max()) + 1) + models[codes[chosen]]
        ask_of, _ = pd.factorize(key)
        _, firsts_e = np.unique(ask_of, return_index=True)
        asks = [
            policy.extraction_request(
                requests[codes[chosen[f]]], answer.texts[leaf[chosen[f]]] or "", ctx
            )
            for f in firsts_e.tolist()
        ]
        extra = await _draw(
            policy,
            asks,
            members_of(ask_of, len(asks)),
            ids[chosen],
            ctx,
            STEP_STREAM + EXTRACT_STREAM_OFFSET,
        )
        again, again_status = _parsed(extra, ctx)
        guesses[chosen] = again[extra.leaf]
        statuses[chosen] = again_status[extra.leaf]
        extracted[chosen] = True
        latency[chosen] += extra.seconds[extra.leaf]
        prompt_tokens[chosen] += extra.prompt_tokens[extra.leaf]
        completion_tokens[chosen] += extra.tokens[extra.leaf]
        said = [t if e is None else e for t, e in zip(extra.texts, extra.errors, strict=True)]
        pair_of, pairs = pd.factorize(leaf[chosen] * len(said) + extra.leaf)
        stored = np.asarray(
            [with_extraction(raw_l[p // len(said)], said[p % len(said)] or "") for p in pairs],
            dtype=object,
        )
        raw[chosen] = stored[pair_of]
    return decisions_table(
        ids,
        ctx.round,
        guesses,
        statuses,
        raw=raw.tolist(),
        latency_s=latency,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        extracted=extracted,
    )


def _to_extract(policy: DrawingPolicy, answer: Draws, statuses: np.ndarray) -> np.ndarray:
    """The distinct answers the extraction call decides (as `LLMPolicy._to_extract`)."""
    if policy.extract_number == "never":
        return np.array([], dtype=np.int64)
    wanted = statuses == Status.NO_NUMBER if policy.extract_number == "fallback" else True
    answered = np.array(
        [
            e is None and bool(t and t.strip())
            for t, e in zip(answer.texts, answer.errors, strict=True)
        ],
        dtype=bool,
    )
    return np.flatnonzero(answered & wanted)
