"""Distribution mode: every agent's constrained answer drawn from its own prompt's distribution,
at the cost of what is distinct.

Agents whose prompts are identical form a `PromptGroup`. For each group the model scores the
root of an answer trie once: the logits of the tokens the integer grammar allows next. Every
agent at the node draws its token with its own uniform, a pure function of (seed, agent, round,
step) (`agents.streams`), through the workbench's sampler (`sampler`); agents that drew the
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

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.llm.base import ChatRequest, SamplingParams, report_drawn
from workbench.llm.distribution.sampler import distribution
from workbench.llm.distribution.scorer import FAILURES, Node, NodeScorer
from workbench.llm.distribution.vocabulary import IntegerVocabulary

STEP_STREAM = 0x7E1E
"""Base of the stream numbers of answer steps: the uniform of an agent's token at depth d of its
answer is `uniform(seed, agent, round, STEP_STREAM + d)` (the extraction step adds
`EXTRACT_STREAM_OFFSET`)."""
EXTRACT_STREAM_OFFSET = 0x1000


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
        except FAILURES as exc:
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
            except FAILURES as exc:
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
