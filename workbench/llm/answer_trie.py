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
and receives their logits. One driver (`draw_answers`) advances a window of walks in step for
every kind of model; the scorer (`NodeScorer`) owns how: its window, when it takes new walks,
whether shards take turns at it, and how one step's nodes are scored (an engine in this process
batches their answer rows into shared decodes; a server's scorer sends them as batched requests,
each walk's failure its own).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

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
_FAILURES = (ModelError, ValueError, RuntimeError, OSError)
"""What a failing model raises: the group whose walk it stops fails, never the others."""


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


class NodeScorer(ABC):
    """What a model provides for distribution mode: its integer vocabulary, its prompts' tokens
    and its nodes' logits, and how its walks are scheduled, which it owns so that no caller
    asks what kind of scorer it has: how many groups walk in step (`window`), whether new
    walks may start now (`accepting`), whether shards take turns at it (`turn`), and how one
    step's nodes of many walks are scored with a failure kept to its own walk (`score_walks`).
    """

    concurrent: bool = False
    """True: many shards' walks may share the scorer at once (a server); False: the shards of
    one event loop take turns (`turn`: an engine in this process, whose cache holds one prompt,
    would otherwise evaluate each other's prompts again at every depth)."""
    window: int = 1
    """Groups walked in step: each step's nodes of them all go to `score_walks` together."""

    def accepting(self) -> bool:
        """Whether new walks may start now (the walks in flight always finish)."""
        return True

    def turn(self) -> AbstractAsyncContextManager[object]:
        """Held while one shard's groups walk: this loop's lock for a scorer that is not
        `concurrent`, nothing for one that is."""
        if self.concurrent:
            return nullcontext()
        loop = asyncio.get_running_loop()
        locks = self.__dict__.get("_turns")
        if locks is None:  # subclasses need not call a base __init__
            locks = self.__dict__["_turns"] = weakref.WeakKeyDictionary()
        return locks.setdefault(loop, asyncio.Lock())

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """How the node logits are computed (recorded in the manifest, part of cache keys)."""

    @abstractmethod
    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The tokens of integer answers in [low, high]."""

    @abstractmethod
    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """Each request's chat as the model sees it, ready for its answer."""

    @abstractmethod
    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """The logits of each node's allowed tokens (any additive constant per node)."""

    async def score_walks(
        self, walks: Sequence[Sequence[Node]]
    ) -> list[list[np.ndarray] | BaseException]:
        """Each walk's nodes of one step scored: their logits, or the failure that is that
        walk's alone. A `concurrent` scorer (a server) is asked for every walk at once (it
        batches what arrives together); any other gets one call for them all (an engine batches
        their rows), asked again walk by walk when it fails."""
        if self.concurrent:
            return list(await asyncio.gather(*(self._score_or_failure(w) for w in walks)))
        try:
            scores = await self.score([node for nodes in walks for node in nodes])
        except _FAILURES:
            return [await self._score_or_failure(nodes) for nodes in walks]
        out: list[list[np.ndarray] | BaseException] = []
        at = 0
        for nodes in walks:
            out.append(scores[at : at + len(nodes)])
            at += len(nodes)
        return out

    async def _score_or_failure(self, nodes: Sequence[Node]) -> list[np.ndarray] | BaseException:
        """One walk's nodes scored, or the failure that stopped them."""
        try:
            return await self.score(nodes)
        except _FAILURES as exc:
            return exc


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
    """Every group's answers through `scorer`: the one driver. Up to `scorer.window` groups'
    walks advance in step, in prompt order (each prompt shares the most pieces with the one
    before it); each step's nodes of them all go to `scorer.score_walks` together; a finished
    walk makes room for the next group, unless the scorer is not `accepting` new walks (an
    engine's node slots clear once the walks in flight are done). A failure is its own
    group's: every agent of that group fails, the others are answered."""
    counts = counts if counts is not None else TrieCounts()
    if not groups:
        return []
    prompts = await scorer.prompt_tokens([g.request for g in groups])
    counts.prompts += len(groups)
    order = sorted(range(len(groups)), key=prompts.__getitem__)
    answers: list[GroupAnswers | None] = [None] * len(groups)
    waiting = iter(order)
    walking: list[_Walking] = []

    def finish(index: int, done: GroupAnswers, start: float) -> None:
        done.seconds = time.perf_counter() - start
        answers[index] = done
        report_group(groups[index], done)

    def advance(walker: _Walking, scores: list[np.ndarray] | BaseException) -> bool:
        """Send a walk its logits (or its failure); False once it has finished."""
        try:
            if isinstance(scores, BaseException):
                raise scores
            walker.nodes = walker.steps.send(scores)
            return True
        except StopIteration as stop:
            finish(walker.index, stop.value, walker.start)
        except _FAILURES as exc:
            walker.steps.close()
            index = walker.index
            finish(index, _failed(groups[index], prompts[index], exc), walker.start)
        return False

    while True:
        while len(walking) < max(1, scorer.window) and (not walking or scorer.accepting()):
            index = next(waiting, None)
            if index is None:
                break
            start = time.perf_counter()
            group, prompt = groups[index], prompts[index]
            try:
                steps = await _start(scorer, group, prompt, params, uniforms, counts)
                walking.append(_Walking(index, steps, next(steps), start))
            except StopIteration as stop:
                finish(index, stop.value, start)
            except _FAILURES as exc:
                finish(index, _failed(group, prompt, exc), start)
        if not walking:
            break
        scored = await scorer.score_walks([w.nodes for w in walking])
        walking = [w for w, mine in zip(walking, scored, strict=True) if advance(w, mine)]
    return answers  # type: ignore[return-value]


async def _start(
    scorer: NodeScorer,
    group: PromptGroup,
    prompt: tuple[int, ...],
    params: SamplingParams,
    uniforms: Callable[[np.ndarray, int], np.ndarray],
    counts: TrieCounts,
) -> Generator[list[Node], list[np.ndarray], GroupAnswers]:
    """A group's walk, ready to yield its root."""
    constraint = group.request.constraint
    if constraint is None or constraint.integer_range is None:
        raise ValueError("distribution mode draws integer answers only")
    vocab = await scorer.vocabulary(*constraint.integer_range)
    return walk(prompt, group.agent_ids, vocab, params, uniforms, counts)


def _failed(group: PromptGroup, prompt: tuple[int, ...], exc: BaseException) -> GroupAnswers:
    """Every agent of a group failed, with the model's error."""
    leaf = np.zeros(len(group.agent_ids), dtype=np.int64)
    return GroupAnswers([], [], leaf, len(prompt), error=f"{type(exc).__name__}: {exc}")


@dataclass
class _Walking:
    index: int
    steps: Generator[list[Node], list[np.ndarray], GroupAnswers]
    nodes: list[Node]
    start: float


def report_group(group: PromptGroup, answers: GroupAnswers) -> None:
    """One drawn group's progress: its agents, prompt tokens and answer tokens
    (`base.report_drawn`)."""
    n = len(group.agent_ids)
    drawn = 0
    if answers.error is None:
        drawn = int(np.bincount(answers.leaf, minlength=len(answers.tokens)) @ answers.tokens)
    report_drawn(group.request, n, answers.error is not None, n * answers.prompt_tokens, drawn)
