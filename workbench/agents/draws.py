"""How LLM agents decide: a step's answers had from the model, then one `decide` for every path.

A shard's round is asked as prompts (`agents.prompts.ShardPrompts`: one chat per distinct
prompt in distribution mode, one per agent otherwise, as groups of one). An `Ask` has a step's
answers from the model as `Draws`: a table of distinct answers and each agent's place in it.

- `DrawnAnswers` (distribution mode): every agent's answer drawn through the answer trie
  (`llm.distribution`), each agent with its own uniforms, a pure function of (seed, agent,
  round, step); the paper's extraction call, when it applies, is asked once per distinct
  (answer, model).
- `GeneratedAnswers` (one generation per agent): the model's `generate`, each chat's seed its
  agent's; the extraction call is asked per agent, with the agent's own seed.

`decide` then parses every distinct answer once, chooses what the extraction call decides,
asks it, adds its costs to the agent's and assembles the shard's decisions table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.agents import streams
from workbench.agents.prompts import Prompts, ShardPrompts, members_of
from workbench.agents.shard import RoundContext, decisions_table
from workbench.config import ExtractNumber
from workbench.game import Status, answer_prefer, parse_answers
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams, with_extraction
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.walk import (
    EXTRACT_STREAM_OFFSET,
    STEP_STREAM,
    GroupAnswers,
    PromptGroup,
    TrieCounts,
)


@dataclass
class Draws:
    """One step's answers spread to agents: per agent the index of its answer (`leaf`); per
    answer its text, error and error kind, answer and prompt tokens, and the seconds it took."""

    leaf: np.ndarray
    texts: list[str | None]
    errors: list[str | None]
    kinds: list[str | None]
    tokens: np.ndarray
    prompt_tokens: np.ndarray
    seconds: np.ndarray

    def said(self) -> np.ndarray:
        """What each answer said, as stored: its text, or its error when it failed."""
        pairs = zip(self.texts, self.errors, strict=True)
        return np.asarray([t if e is None else e for t, e in pairs], dtype=object)

    def answered(self) -> np.ndarray:
        """Whether each answer came back with some text (not failed, not blank)."""
        pairs = zip(self.texts, self.errors, strict=True)
        return np.array([e is None and bool(t and t.strip()) for t, e in pairs], dtype=bool)


@dataclass(frozen=True)
class Step:
    """One step's asks: `chats[i]` answered for the agents `members[i]` (positions into `ids`);
    `extraction` says which step (the answer, or the paper's extraction call)."""

    chats: Sequence[ChatRequest]
    members: Sequence[np.ndarray]
    ids: np.ndarray
    extraction: bool = False


class Ask(Protocol):
    """Has a step's answers from the model. `per_agent`: whether the extraction call is asked
    per agent (else once per distinct answer)."""

    per_agent: bool

    async def __call__(self, step: Step) -> Draws: ...


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


@dataclass
class DrawnAnswers:
    """Distribution mode: each chat's agents draw their answers through its answer trie; what
    the walks did is added to `counts`."""

    model: ChatModel
    params: SamplingParams
    ctx: RoundContext
    counts: TrieCounts
    per_agent: bool = False

    async def __call__(self, step: Step) -> Draws:
        """The agents' answers, drawn with the step's uniforms."""
        base = STEP_STREAM + (EXTRACT_STREAM_OFFSET if step.extraction else 0)
        pairs = zip(step.chats, step.members, strict=True)
        groups = [PromptGroup(c, step.ids[m]) for c, m in pairs]
        uniforms = StepUniforms(self.ctx.seed, self.ctx.round, base)
        answers = await self.model.draw_answers(groups, self.params, uniforms, self.counts)
        return _spread(answers, step.members, len(step.ids))


@dataclass
class GeneratedAnswers:
    """One generation per chat (`ChatModel.generate`), each chat asked for one agent."""

    model: ChatModel
    params: SamplingParams
    per_agent: bool = True

    async def __call__(self, step: Step) -> Draws:
        """Each chat's one completion, as the answer of its one agent."""
        results: list[ChatResult] = await self.model.generate(list(step.chats), self.params)
        leaf = np.zeros(len(step.ids), dtype=np.int64)
        for i, who in enumerate(step.members):
            leaf[who] = i
        return Draws(
            leaf,
            [r.text for r in results],
            [r.error for r in results],
            [r.error_kind for r in results],
            np.array([r.completion_tokens for r in results], dtype=np.int64),
            np.array([r.prompt_tokens for r in results], dtype=np.int64),
            np.array([r.latency_s for r in results], dtype=np.float64),
        )


async def decide(prompts: ShardPrompts, ask: Ask, ctx: RoundContext, asking: Prompts) -> pa.Table:
    """The shard's decisions for the round: every answer had once per chat and parsed once per
    distinct answer, then, where `asking.extract_number` sends them, the extraction call
    decides (its failure included: a timed-out extraction is a timeout), its costs added to the
    agent's and both texts stored (`with_extraction`)."""
    answer = await ask(Step(prompts.chats, prompts.members, prompts.ids))
    stated_only = asking.extract_number == "fallback"
    guesses_l, statuses_l = _parsed(
        answer, ctx, prefer=answer_prefer(ctx.game), stated_only=stated_only
    )
    raw_l = answer.said()
    leaf = answer.leaf
    guesses, statuses, raw = guesses_l[leaf], statuses_l[leaf], raw_l[leaf]
    latency = answer.seconds[leaf]
    prompt_tokens = answer.prompt_tokens[leaf]
    completion_tokens = answer.tokens[leaf]
    extracted = np.zeros(len(prompts.ids), dtype=bool)
    todo = to_extract(asking.extract_number, answer, statuses_l)
    if len(todo):
        chosen = np.flatnonzero(np.isin(leaf, todo))
        ask_of = _extraction_asks(prompts, answer, chosen, ask.per_agent)
        _, firsts = np.unique(ask_of, return_index=True)
        asks = [
            asking.extraction(
                prompts.chats[prompts.codes[chosen[f]]], answer.texts[leaf[chosen[f]]] or "", ctx
            )
            for f in firsts.tolist()
        ]
        extra = await ask(Step(asks, members_of(ask_of, len(asks)), prompts.ids[chosen], True))
        again, again_status = _parsed(extra, ctx)  # read as a direct answer: its first number
        guesses[chosen] = again[extra.leaf]
        statuses[chosen] = again_status[extra.leaf]
        extracted[chosen] = True
        latency[chosen] += extra.seconds[extra.leaf]
        prompt_tokens[chosen] += extra.prompt_tokens[extra.leaf]
        completion_tokens[chosen] += extra.tokens[extra.leaf]
        said = extra.said()
        pair_of, pairs = pd.factorize(leaf[chosen] * len(said) + extra.leaf)
        stored = np.asarray(
            [with_extraction(raw_l[p // len(said)], said[p % len(said)] or "") for p in pairs],
            dtype=object,
        )
        raw[chosen] = stored[pair_of]
    return decisions_table(
        prompts.ids,
        ctx.round,
        guesses,
        statuses,
        raw=raw.tolist(),
        latency_s=latency,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        extracted=extracted,
    )


def to_extract(extract_number: ExtractNumber, answer: Draws, statuses: np.ndarray) -> np.ndarray:
    """The distinct answers the extraction call decides: none (never), those that state no
    answer (fallback) or all (always); never a failed or a blank answer (there is nothing to
    extract, and a constrained extraction of nothing would invent a number)."""
    if extract_number == "never":
        return np.array([], dtype=np.int64)
    wanted = statuses == Status.NO_NUMBER if extract_number == "fallback" else True
    return np.flatnonzero(answer.answered() & wanted)


def _extraction_asks(
    prompts: ShardPrompts, answer: Draws, chosen: np.ndarray, per_agent: bool
) -> np.ndarray:
    """Which extraction ask each chosen agent makes: its own (per agent), or one per distinct
    (answer text, model), shared by the agents that drew it."""
    if per_agent:
        return np.arange(len(chosen), dtype=np.int64)
    models = pd.factorize(pd.Series([c.model or "" for c in prompts.chats]))[0]
    texts = pd.factorize(pd.Series([t or "" for t in answer.texts]))[0]
    key = texts[answer.leaf[chosen]] * (int(models.max()) + 1) + models[prompts.codes[chosen]]
    ask_of, _ = pd.factorize(key)
    return np.asarray(ask_of, dtype=np.int64)


def _parsed(draws: Draws, ctx: RoundContext, **options: object) -> tuple[np.ndarray, np.ndarray]:
    """(guesses, statuses) of every distinct answer."""
    return parse_answers(draws.texts, draws.kinds, ctx.game.low, ctx.game.high, **options)  # type: ignore[arg-type]


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
    kinds: list[str | None] = [None if e is None else Status.MODEL_ERROR for e in errors]
    return Draws(
        leaf,
        texts,
        errors,
        kinds,
        np.asarray(tokens, dtype=np.int64),
        np.asarray(prompt_tokens, dtype=np.int64),
        np.asarray(seconds, dtype=np.float64),
    )
