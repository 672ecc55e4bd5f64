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
and receives their logits, so one walker serves a model in this process (a window of walks in
step, each step's nodes scored in one call: `_walk_together`) and a server (many groups' walks
in flight at once).
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
    """Every group's answers through `scorer`: all groups at once for a server (the scorer
    bounds its own concurrency); for a model in this process, `scorer.window` groups' walks
    in step, in prompt order (`_walk_together`)."""
    counts = counts if counts is not None else TrieCounts()
    if not groups:
        return []
    prompts = await scorer.prompt_tokens([g.request for g in groups])
    counts.prompts += len(groups)

    if scorer.concurrent:
        return list(
            await asyncio.gather(
                *(
                    _walk_alone(scorer, g, p, params, uniforms, counts)
                    for g, p in zip(groups, prompts, strict=True)
                )
            )
        )
    # in prompt order, so that each prompt shares the most pieces with the ones before it
    order = sorted(range(len(groups)), key=prompts.__getitem__)
    return await _walk_together(scorer, groups, prompts, order, params, uniforms, counts)


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


_FAILURES = (ModelError, ValueError, RuntimeError, OSError)


async def _walk_alone(
    scorer: NodeScorer,
    group: PromptGroup,
    prompt: tuple[int, ...],
    params: SamplingParams,
    uniforms: Callable[[np.ndarray, int], np.ndarray],
    counts: TrieCounts,
) -> GroupAnswers:
    """One group's walk to its end (a server: many of these in flight at once)."""
    start = time.perf_counter()
    try:
        steps = await _start(scorer, group, prompt, params, uniforms, counts)
        answers = await _drive(steps, scorer.score)
    except _FAILURES as exc:
        answers = _failed(group, prompt, exc)
    answers.seconds = time.perf_counter() - start
    report_group(group, answers)
    return answers


@dataclass
class _Walking:
    index: int
    steps: Generator[list[Node], list[np.ndarray], GroupAnswers]
    nodes: list[Node]
    start: float


async def _walk_together(
    scorer: NodeScorer,
    groups: Sequence[PromptGroup],
    prompts: Sequence[tuple[int, ...]],
    order: Sequence[int],
    params: SamplingParams,
    uniforms: Callable[[np.ndarray, int], np.ndarray],
    counts: TrieCounts,
) -> list[GroupAnswers]:
    """Up to `scorer.window` groups' walks in step, in `order`: each step scores the nodes of
    them all in one call (a model in this process batches their answer rows); a finished walk
    makes room for the next group, unless the scorer is not `accepting` new walks (its node
    slots clear once the walks in flight are done). A call that fails is retried walk by walk,
    so a failure is the group's own."""
    answers: list[GroupAnswers | None] = [None] * len(groups)
    window = max(1, getattr(scorer, "window", 1))
    accepting = getattr(scorer, "accepting", lambda: True)
    waiting = iter(order)
    walking: list[_Walking] = []

    def finish(index: int, done: GroupAnswers, start: float) -> None:
        done.seconds = time.perf_counter() - start
        answers[index] = done
        report_group(groups[index], done)

    def advance(walker: _Walking, scores: list[np.ndarray]) -> bool:
        """Send a walk its logits; False once it has finished."""
        try:
            walker.nodes = walker.steps.send(scores)
            return True
        except StopIteration as stop:
            finish(walker.index, stop.value, walker.start)
        except _FAILURES as exc:
            fail(walker, exc)
        return False

    def fail(walker: _Walking, exc: BaseException) -> None:
        walker.steps.close()
        index = walker.index
        finish(index, _failed(groups[index], prompts[index], exc), walker.start)

    while True:
        while len(walking) < window and (not walking or accepting()):
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
        try:
            scores = await scorer.score([node for w in walking for node in w.nodes])
        except _FAILURES:
            scores = None
        still: list[_Walking] = []
        at = 0
        for walker in walking:
            if scores is None:
                try:
                    mine = await scorer.score(walker.nodes)
                except _FAILURES as exc:
                    fail(walker, exc)
                    continue
            else:
                mine = scores[at : at + len(walker.nodes)]
                at += len(walker.nodes)
            if advance(walker, mine):
                still.append(walker)
        walking = still
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
