"""The embedded model's per-agent sampler chain: the one sampling law (`config.sampling`) in
llama.cpp's samplers, with the integer grammar checked on its few candidates.

llama-cpp-python's completions would sample with their own chain (grammar, top-k 40, typical,
top-p and min-p 0.05 at temperature 1, then temperature): another distribution than the law's,
which distribution mode draws from. So the chain is built here in the law's order instead:
grammar, temperature, min-p, top-k, top-p, then a draw seeded by the request, and `sampling:
server` answers follow the same law as distribution mode's (each from llama.cpp's own random
stream). The grammar step decodes every one of SmolLM2's 49152 token pieces on each draw: 11 ms
a draw here, more than half a decode. For an integer grammar only tokens made of digits and "-"
(and the end of text) can ever pass, and every other token leaves the grammar step at minus
infinity, so the chain first keeps just those candidates (`IntegerCandidates`) and runs the same
steps on them: the same distribution, and the same answers, for a fraction of the work.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from workbench.llm.base import SamplingParams


def integer_candidates(llm: Any) -> np.ndarray:
    """Ids of the tokens an integer grammar can ever accept: pieces made only of digits and
    "-", and the end-of-generation tokens."""
    import llama_cpp

    vocab = llm._model.vocab
    keep = []
    for token in range(llm.n_vocab()):
        if llama_cpp.llama_vocab_is_eog(vocab, token):
            keep.append(token)
            continue
        piece = llm.detokenize([token], special=True)
        if piece and all(c in b"0123456789-" for c in piece):
            keep.append(token)
    return np.asarray(keep, dtype=np.int64)


class IntegerCandidates:
    """A first step of the chain: the candidate array shrunk to `ids` (which arrive in id
    order, the order llama.cpp fills the array in), before the grammar checks them."""

    def __init__(self, ids: np.ndarray) -> None:
        self.ids = ids

    def __call__(self, cur_p: Any) -> None:
        import llama_cpp

        array = cur_p.contents
        n = int(array.size)
        data = np.ctypeslib.as_array(
            ctypes.cast(array.data, ctypes.POINTER(llama_cpp.llama_token_data)), shape=(n,)
        )
        ids = self.ids[self.ids < n]
        if n and int(data[n - 1]["id"]) != n - 1:  # not in id order: leave it to the grammar
            return
        data[: len(ids)] = data[ids]
        array.size = len(ids)
        array.sorted = False
        array.selected = -1


def answer_sampler(
    llm: Any, params: SamplingParams, grammar: Any, candidates: np.ndarray | None
) -> Any:
    """The law's chain in llama.cpp's samplers (grammar, temperature, min-p, top-k, top-p, a
    draw seeded by `llm`'s current seed), led by `IntegerCandidates` when `candidates` is given.
    Temperature 0 is greedy (the likeliest token, as the law says)."""
    from llama_cpp import _internals

    sampler = _internals.LlamaSampler()
    if candidates is not None:
        sampler.add_custom(IntegerCandidates(candidates))
    if grammar is not None:
        sampler.add_grammar(llm._model, grammar)
    if params.temperature == 0:
        sampler.add_greedy()
        return sampler
    sampler.add_temp(params.temperature)
    if params.min_p > 0:
        sampler.add_min_p(params.min_p, 1)
    if params.top_k > 0:
        sampler.add_top_k(params.top_k)
    sampler.add_top_p(params.top_p, 1)
    sampler.add_dist(llm._seed)
    return sampler
