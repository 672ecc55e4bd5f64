"""The one sampling law written out plainly, as `config.sampling`'s docstring states it: the
reference the vectorised sampler, the answer trie and the per-agent chains are checked against."""

from __future__ import annotations

import numpy as np


def reference(
    logits: list[float], temperature: float, top_p: float, top_k: int = 40, min_p: float = 0.0
) -> dict[int, float]:
    """The law (allowed set, temperature, min-p, top-k, top-p), written out plainly (loops, no
    numpy tricks): position -> probability."""
    if temperature == 0:
        best = max(range(len(logits)), key=lambda i: (logits[i], -i))
        return {best: 1.0}
    ranked = sorted(range(len(logits)), key=lambda i: (-logits[i] / temperature, i))
    weights = [float(np.exp((logits[i] - logits[ranked[0]]) / temperature)) for i in ranked]
    ranked = [i for i, w in zip(ranked, weights, strict=True) if w >= min_p]  # w: p / p_max
    if top_k > 0:
        ranked = ranked[:top_k]
    weights = [float(np.exp((logits[i] - logits[ranked[0]]) / temperature)) for i in ranked]
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
