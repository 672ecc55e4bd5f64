"""Distribution mode: every agent's constrained answer drawn from its own prompt's distribution,
at the cost of what is distinct.

Agents whose prompts are identical form a `PromptGroup`. For each group the model scores the
root of an answer trie once: the logits of the tokens the integer grammar allows next. Every
agent at the node draws its token with its own uniform, a pure function of (seed, agent, round,
step) (`agents.streams`), through the workbench's sampler (`llm.sampler`); agents that drew the
same token share the child node, which is scored once, and so on until the grammar allows only
the end (never scored: it is the answer) or `max_tokens` is reached. Model evaluations are the
distinct trie nodes, not the agents, and every answer is the one that agent would have drawn
alone: its node logits do not depend on who else asked (the engines evaluate every node the
same canonical way), and its uniforms are its own.

The walk of one group is a generator (`walk`) that yields the nodes of one depth to be scored
and receives their logits, so one walker serves a model in this process (`drive`, nodes scored
in order) and a server (many groups' walks in flight at once).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, SamplingParams, report_drawn
from workbench.llm.grammar import integer_can_continue
from workbench.llm.sampler import distribution

STEP_STREAM = 0x7E1E
"""Base of the stream numbers of answer steps: the uniform of an agent's token at depth d of its
answer is `uniform(seed, agent, round, STEP_STREAM + d)` (the extraction step adds
`EXTRACT_STREAM_OFFSET`)."""
EXTRACT_STREAM_OFFSET = 0x1000


def complete_integer(text: str, low: int, high: int) -> bool:
    """Whether `text` is an integer of the grammar in [low, high] (no leading zeros, no -0)."""
    digits = text[1:] if text.startswith("-") else text
    if not digits.isdigit() or (len(digits) > 1 and digits.startswith("0")):
        return False
    if text.startswith("-") and digits == "0":
        return False
    return low <= int(text) <= high


@dataclass(frozen=True)
class IntegerVocabulary:
    """The tokens an integer answer can be made of: `pieces` (token id -> its text, made only of
    digits and "-") and `end_ids` (the end-of-generation tokens), for one range [low, high]."""

    pieces: tuple[tuple[int, str], ...]
    end_ids: tuple[int, ...]
    low: int
    high: int

    def allowed(self, text: str) -> np.ndarray:
        """Token ids the grammar allows after answer `text`, ascending."""
        return _allowed(self, text)

    def can_continue(self, text: str) -> bool:
        """Whether any token other than the end may follow `text`."""
        return integer_can_continue(text, self.low, self.high)

    def is_end(self, token: int) -> bool:
        """Whether `token` ends the answer."""
        return token in self.end_ids

    def piece(self, token: int) -> str:
        """The text of a digit token."""
        return _piece_map(self)[token]


@lru_cache(maxsize=64)
def _piece_map(vocab: IntegerVocabulary) -> dict[int, str]:
    return dict(vocab.pieces)


@lru_cache(maxsize=4096)
def _allowed(vocab: IntegerVocabulary, text: str) -> np.ndarray:
    ok = [
        token
        for token, piece in vocab.pieces
        if complete_integer(text + piece, vocab.low, vocab.high)
        or integer_can_continue(text + piece, vocab.low, vocab.high)
    ]
    if complete_integer(text, vocab.low, vocab.high):
        ok.extend(vocab.end_ids)
    out = np.array(sorted(set(ok)), dtype=np.int64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True)
class Node:
    """One trie node to score: the prompt's tokens, the answer tokens drawn so far, and the
    tokens allowed next (ascending); its score is their logits, in that order."""

    prompt: tuple[int, ...]
    prefix: tuple[int, ...]
    allowed: np.ndarray


class NodeScorer(Protocol):
    """What a model provides for distribution mode."""

    concurrent: bool
    """True: many groups' nodes may be asked for at once (a server); False: one group at a time
    (an engine in this process, whose cache holds one prompt)."""

    def describe(self) -> dict[str, Any]:
        """How the node logits are computed (recorded in the manifest, part of cache keys)."""
        ...

    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The tokens of integer answers in [low, high]."""
        ...

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """Each request's chat as the model sees it, ready for its answer."""
        ...

    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """The logits of each node's allowed tokens (any additive constant per node)."""
        ...


@dataclass
class PromptGroup:
    """Agents that ask one identical prompt: `request` (a constrained integer answer) and the
    agents' ids."""

    request: ChatRequest
    agent_ids: np.ndarray


@dataclass
class GroupAnswers:
    """One group's answers: the distinct answer texts (`texts`, with their token counts) and,
    per agent in the group's order, which of them it drew (`leaf`)."""

    texts: list[str]
    tokens: list[int]
    leaf: np.ndarray
    prompt_tokens: int
    seconds: float = 0.0
    error: str | None = None  # the model failed this group: every agent of it failed


@dataclass
class TrieCounts:
    """What distribution mode did: distinct prompts, nodes scored, draws made (agent-steps),
    answers (agents) and the distinct answers (trie leaves)."""

    prompts: int = 0
    nodes: int = 0
    draws: int = 0
    answers: int = 0
    leaves: int = 0

    def add(self, other: TrieCounts) -> None:
        """Add another count into this one."""
        for name in ("prompts", "nodes", "draws", "answers", "leaves"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        """The counts as plain data."""
        return {
            "prompts": self.prompts,
            "nodes": self.nodes,
            "draws": self.draws,
            "answers": self.answers,
            "leaves": self.leaves,
        }


@dataclass
class _Branch:
    prefix: tuple[int, ...]
    text: str
    members: np.ndarray  # positions into the group's agents


def _split(members: np.ndarray, picks: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(pick, members who drew it) for each distinct pick, in ascending pick order."""
    order = np.argsort(picks, kind="stable")
    sorted_picks = picks[order]
    cuts = np.flatnonzero(np.diff(sorted_picks)) + 1
    return [
        (int(chunk_picks[0]), members[chunk])
        for chunk, chunk_picks in zip(
            np.split(order, cuts), np.split(sorted_picks, cuts), strict=True
        )
    ]


def walk(
    prompt: tuple[int, ...],
    agent_ids: np.ndarray,
    vocab: IntegerVocabulary,
    params: SamplingParams,
    uniforms: Callable[[np.ndarray, int], np.ndarray],
    counts: TrieCounts,
) -> Generator[list[Node], list[np.ndarray], GroupAnswers]:
    """One group's answer trie, depth by depth: yields the nodes to score, receives their
    logits, and returns which answer every agent drew. `uniforms(agent_ids, depth)` gives each
    agent's uniform for the token at that depth."""
    n = len(agent_ids)
    leaf = np.empty(n, dtype=np.int64)
    texts: list[str] = []
    tokens: list[int] = []

    def finish(branch: _Branch) -> None:
        leaf[branch.members] = len(texts)
        texts.append(branch.text)
        tokens.append(len(branch.prefix))

    frontier = [_Branch((), "", np.arange(n, dtype=np.int64))]
    depth = 0
    while frontier:
        todo: list[tuple[_Branch, Node]] = []
        for branch in frontier:
            allowed = vocab.allowed(branch.text) if depth < params.max_tokens else None
            if (
                allowed is None
                or not len(allowed)
                or (branch.text and not vocab.can_continue(branch.text))
            ):
                finish(branch)  # only the end may follow (or nothing): the answer is complete
            else:
                todo.append((branch, Node(prompt, branch.prefix, allowed)))
        if not todo:
            break
        scores = yield [node for _, node in todo]
        counts.nodes += len(todo)
        frontier = []
        for (branch, node), logits in zip(todo, scores, strict=True):
            u = uniforms(agent_ids[branch.members], depth)
            counts.draws += len(branch.members)
            picks = distribution(logits, params).draw(u)
            for pick, members in _split(branch.members, picks):
                token = int(node.allowed[pick])
                if vocab.is_end(token):
                    finish(_Branch(branch.prefix, branch.text, members))
                else:
                    frontier.append(
                        _Branch(branch.prefix + (token,), branch.text + vocab.piece(token), members)
                    )
        depth += 1
    counts.answers += n
    counts.leaves += len(texts)
    return GroupAnswers(texts, tokens, leaf, len(prompt))


async def draw_answers(
    scorer: NodeScorer,
    groups: Sequence[PromptGroup],
    params: SamplingParams,
    uniforms: Callable[[np.ndarray, int], np.ndarray],
    counts: TrieCounts | None = None,
) -> list[GroupAnswers]:
    """Every group's answers through `scorer`: one group after another for a model in this
    process, all groups at once for a server (the scorer bounds its own concurrency)."""
    counts = counts if counts is not None else TrieCounts()
    if not groups:
        return []
    prompts = await scorer.prompt_tokens([g.request for g in groups])
    counts.prompts += len(groups)

    async def one(group: PromptGroup, prompt: tuple[int, ...]) -> GroupAnswers:
        constraint = group.request.constraint
        if constraint is None or constraint.integer_range is None:
            raise ValueError("distribution mode draws integer answers only")
        start = time.perf_counter()
        try:
            vocab = await scorer.vocabulary(*constraint.integer_range)
            steps = walk(prompt, group.agent_ids, vocab, params, uniforms, counts)
            answers = await _drive(steps, scorer.score)
        except (ModelError, ValueError, RuntimeError, OSError) as exc:
            leaf = np.zeros(len(group.agent_ids), dtype=np.int64)
            error = f"{type(exc).__name__}: {exc}"
            answers = GroupAnswers([], [], leaf, len(prompt), error=error)
        answers.seconds = time.perf_counter() - start
        report_group(group, answers)
        return answers

    if scorer.concurrent:
        pairs = zip(groups, prompts, strict=True)
        return list(await asyncio.gather(*(one(g, p) for g, p in pairs)))
    # in prompt order, so that each prompt shares the most pieces with the one before it
    answers: list[GroupAnswers | None] = [None] * len(groups)
    for i in sorted(range(len(groups)), key=prompts.__getitem__):
        answers[i] = await one(groups[i], prompts[i])
    return answers  # type: ignore[return-value]


def report_group(group: PromptGroup, answers: GroupAnswers) -> None:
    """One drawn group's progress: its agents, prompt tokens and answer tokens
    (`base.report_drawn`)."""
    n = len(group.agent_ids)
    drawn = 0
    if answers.error is None:
        drawn = int(np.bincount(answers.leaf, minlength=len(answers.tokens)) @ answers.tokens)
    report_drawn(group.request, n, answers.error is not None, n * answers.prompt_tokens, drawn)


async def _drive(
    steps: Generator[list[Node], list[np.ndarray], GroupAnswers],
    score: Callable[[Sequence[Node]], Awaitable[list[np.ndarray]]],
) -> GroupAnswers:
    """Run one walk to its end, scoring each depth's nodes with `score`."""
    try:
        nodes = next(steps)
        while True:
            nodes = steps.send(await score(nodes))
    except StopIteration as done:
        return done.value
