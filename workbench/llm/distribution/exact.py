"""A prompt's whole answer distribution under the sampling law, not a sample of it.

Distribution mode scores only the trie nodes its agents reach; walking every node the law gives
mass to yields each answer's exact probability instead: the product of the law's probabilities
(`sampler.distribution`) along the answer's tokens. The same scorer answers, so the numbers are
the ones a run's agents draw from. `full_trie_nodes` counts the nodes a whole walk may score,
the bound on what one prompt can cost.
"""

from __future__ import annotations

from collections.abc import Sequence

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


async def answer_distribution(
    scorer: NodeScorer,
    prompt: Sequence[int],
    vocab: IntegerVocabulary,
    params: SamplingParams,
) -> dict[str, float]:
    """Every answer's probability for one prompt's tokens: each depth's nodes with mass are
    scored together, and an answer's probability is the law's along its tokens."""
    out: dict[str, float] = {}
    frontier: list[tuple[tuple[int, ...], str, float]] = [((), "", 1.0)]
    depth = 0
    while frontier:
        todo = []
        for prefix, text, mass in frontier:
            if _scored(vocab, text, depth, params):
                todo.append((prefix, text, mass))
            else:
                out[text] = out.get(text, 0.0) + mass
        nodes = [Node(tuple(prompt), prefix, vocab.allowed(text)) for prefix, text, _ in todo]
        scores = await scorer.score(nodes) if nodes else []
        frontier = []
        for (prefix, text, mass), node, logits in zip(todo, nodes, scores, strict=True):
            law = distribution(logits, params)
            for choice, p in zip(law.choices.tolist(), law.probs.tolist(), strict=True):
                token = int(node.allowed[choice])
                if vocab.is_end(token):
                    out[text] = out.get(text, 0.0) + mass * p
                else:
                    frontier.append((prefix + (token,), text + vocab.piece(token), mass * p))
        depth += 1
    return out
