"""The workbench sampler's rule written out plainly, as its docstring states it: the reference
the vectorised sampler and the answer trie are checked against."""

from __future__ import annotations

import numpy as np

from workbench.llm.sampler import TOP_K


def reference(logits: list[float], temperature: float, top_p: float) -> dict[int, float]:
    """The rule of `llm.sampler`'s docstring, written out plainly (loops, no numpy tricks)."""
    if temperature == 0:
        best = max(range(len(logits)), key=lambda i: (logits[i], -i))
        return {best: 1.0}
    ranked = sorted(range(len(logits)), key=lambda i: (-logits[i] / temperature, i))[:TOP_K]
    weights = [np.exp((logits[i] - logits[ranked[0]]) / temperature) for i in ranked]
    total = sum(weights)
    probs = [w / total for w in weights]
    kept, mass = [], 0.0
    for i, p in zip(ranked, probs, strict=True):
        kept.append((i, p))
        mass += p
        if mass >= top_p:
            break
    norm = sum(p for _, p in kept)
    return {i: p / norm for i, p in kept}
