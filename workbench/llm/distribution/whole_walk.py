"""A prompt's whole answer distribution under the sampling law, not a sample of it.

Distribution mode scores only the trie nodes its agents reach; walking every node the law gives
mass to yields each answer's exact probability instead: the product of the law's probabilities
(`sampler.distribution`) along the answer's tokens. The same scorer answers, so the numbers are
the ones a run's agents draw from. `full_trie_nodes` counts the nodes a whole walk may score,
the bound on what one prompt can cost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.llm.base import SamplingParams
from workbench.llm.distribution.sampler import distribution
from workbench.llm.distribution.scorer import Node, NodeScorer
from workbench.llm.distribution.vocabulary import IntegerVocabulary


def _scored(vocab: IntegerVocabulary, text: str, depth: int, params: SamplingParams) -> bool:
    """Whether the walk scores the node after `text` (the rule `walk.walk` follows)."""
    if depth >= params.max_tokens or not len(vocab.allowed(text)):
        return False
    return not text or vocab.can_continue(text)


def full_trie_nodes(vocab: IntegerVocabulary, params: SamplingParams) -> tuple[int, int]:
    """(nodes, depth): how many nodes a walk that reached every answer would score, and the
    most tokens an answer takes."""
    nodes, deepest = 0, 0
    frontier = [("", 0)]
    while frontier:
        text, depth = frontier.pop()
        deepest = max(deepest, depth)
        if not _scored(vocab, text, depth, params):
            continue
        nodes += 1
        for token in vocab.allowed(text).tolist():
            if not vocab.is_end(token):
                frontier.append((text + vocab.piece(token), depth + 1))
    return nodes, deepest


@dataclass
class ExactWalk:
    """A whole walk of one prompt: each answer's probability, the probability of reaching each
    node it scored, and the seconds spent scoring the root (the prompt's own evaluation) and
    the nodes below it."""

    answers: dict[str, float] = field(default_factory=dict)
    node_mass: list[float] = field(default_factory=list)
    root_seconds: float = 0.0
    node_seconds: float = 0.0

    def expected_nodes(self, agents: int | np.ndarray) -> np.ndarray:
        """How many nodes `agents` agents at this prompt are expected to make a walk score: a
        node is scored when one of them reaches it."""
        mass = np.asarray(self.node_mass, dtype=np.float64)
        m = np.atleast_1d(np.asarray(agents, dtype=np.float64))
        return (1.0 - np.power.outer(1.0 - mass, m)).sum(axis=0)


async def answer_walk(
    scorer: NodeScorer,
    prompt: Sequence[int],
    vocab: IntegerVocabulary,
    params: SamplingParams,
) -> ExactWalk:
    """Walk every node the law gives mass to, depth by depth (each depth's nodes scored
    together); an answer's probability is the law's along its tokens."""
    out = ExactWalk()
    frontier: list[tuple[tuple[int, ...], str, float]] = [((), "", 1.0)]
    depth = 0
    while frontier:
        todo = []
        for prefix, text, mass in frontier:
            if _scored(vocab, text, depth, params):
                todo.append((prefix, text, mass))
            else:
                out.answers[text] = out.answers.get(text, 0.0) + mass
        nodes = [Node(tuple(prompt), prefix, vocab.allowed(text)) for prefix, text, _ in todo]
        start = time.perf_counter()
        scores = await scorer.score(nodes) if nodes else []
        seconds = time.perf_counter() - start
        if depth == 0:
            out.root_seconds += seconds
        else:
            out.node_seconds += seconds
        out.node_mass += [mass for _, _, mass in todo]
        frontier = []
        for (prefix, text, mass), node, logits in zip(todo, nodes, scores, strict=True):
            law = distribution(logits, params)
            for choice, p in zip(law.choices.tolist(), law.probs.tolist(), strict=True):
                token = int(node.allowed[choice])
                if vocab.is_end(token):
                    out.answers[text] = out.answers.get(text, 0.0) + mass * p
                else:
                    frontier.append((prefix + (token,), text + vocab.piece(token), mass * p))
        depth += 1
    return out
