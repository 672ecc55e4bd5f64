"""The workbench's own token sampler: one pure function of (logits, settings, an agent's uniform).

Distribution mode draws every agent's answer token itself instead of asking a model's sampler,
so the draw can be shared out: the logits of one trie node are turned into one distribution, and
every agent at that node picks from it with its own counter-based uniform (`agents.streams`).
Nothing here depends on how many agents ask, in which order, on which shard or backend.

The rule is the one sampling law (`config.sampling`, whose version and settings the manifest
records through `SamplingParams.describe`), in vLLM's order:

1. Only the allowed tokens take part (the caller passes their logits, in ascending token id).
2. Temperature 0: the likeliest token; ties go to the lowest token id. No uniform is used.
3. Otherwise the logits are divided by the temperature and sorted by decreasing logit (ties by
   ascending token id); tokens whose probability is below `min_p` times the likeliest's are
   dropped, then all but the `top_k` likeliest (`top_k` 0: none); what is left is turned into
   probabilities (softmax), cut to the shortest head whose mass reaches `top_p` (at least one
   token) and renormalised.
4. An agent with uniform u in [0, 1) takes the first token whose cumulative probability exceeds
   u (inverse CDF, in the sorted order of step 3).

All arithmetic is float64 numpy, so the same logits and settings give the same distribution on
every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.llm.base import SamplingParams

SAMPLER_VERSION = "workbench-sampler/2"
"""How this module draws with the law: inverse CDF over the law's distribution, in float64."""


@dataclass(frozen=True)
class Distribution:
    """Where a node's draws may land: positions into the allowed set, with their
    probabilities, in drawing order (likeliest first)."""

    choices: np.ndarray  # int64 positions into the allowed tokens
    probs: np.ndarray  # float64, sums to 1

    def draw(self, u: np.ndarray) -> np.ndarray:
        """Each uniform's choice (a position into the allowed tokens): inverse CDF."""
        if len(self.choices) == 1:
            return np.full(len(u), self.choices[0], dtype=np.int64)
        cdf = np.cumsum(self.probs)
        picks = np.searchsorted(cdf, u, side="right")
        return self.choices[np.minimum(picks, len(self.choices) - 1)]


def distribution(logits: np.ndarray, params: SamplingParams) -> Distribution:
    """The distribution rule of this module's docstring over one node's allowed logits."""
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or not len(z):
        raise ValueError("the sampler needs the logits of at least one allowed token")
    finite = np.isfinite(z)
    if not finite.any():
        raise ValueError("every allowed token has a logit of minus infinity")
    positions = np.arange(len(z), dtype=np.int64)
    if params.temperature == 0:
        best = int(positions[finite][np.argmax(z[finite])])  # argmax: the first (lowest id)
        return Distribution(np.array([best], dtype=np.int64), np.ones(1))
    scaled = z[finite] / params.temperature
    order = positions[finite][np.lexsort((positions[finite], -scaled))]
    head = z[order] / params.temperature
    if params.min_p > 0:  # p_i >= min_p * p_max, in logits: z_i - z_max >= log(min_p)
        order = order[head - head[0] >= np.log(params.min_p)]
    if params.top_k > 0:
        order = order[: params.top_k]
    head = z[order] / params.temperature
    probs = np.exp(head - head[0])
    probs /= probs.sum()
    mass = np.cumsum(probs)
    keep = int(np.searchsorted(mass, params.top_p, side="left")) + 1
    keep = min(keep, len(order))
    probs = probs[:keep] / probs[:keep].sum()
    return Distribution(order[:keep], probs)


def draw(logits: np.ndarray, params: SamplingParams, u: np.ndarray) -> np.ndarray:
    """Positions into the allowed tokens, one per uniform in `u`."""
    return distribution(logits, params).draw(np.asarray(u, dtype=np.float64))
