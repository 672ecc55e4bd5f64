"""The embedded model's sampler chain (the one law in llama.cpp's samplers) with the integer
grammar run on its few candidates draws exactly what the same chain draws with the grammar over
all 49152 tokens."""

from __future__ import annotations

import pytest

from workbench.llm.base import SamplingParams
from workbench.llm.embedded.engine import grammar_text
from workbench.llm.embedded.llamacpp_sampling import answer_sampler
from workbench.llm.grammar import integer_range_grammar

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("prompt", "low", "high"),
    [
        ("Pick a whole number from 0 to 100. Your number: ", 0, 100),
        ("The temperature in degrees, from -30 to 7, was ", -30, 7),
    ],
)
def test_the_shrunk_chain_draws_what_the_full_chain_draws(
    embedded_model, prompt: str, low: int, high: int
) -> None:
    engine = embedded_model.engine
    llm = engine.llm
    candidates = engine.integer_tokens()
    assert 10 < len(candidates) < 200  # digits, "-", a few digit groups, end of text
    grammar = grammar_text(integer_range_grammar(low, high))
    with engine.lock:
        engine.forget()
        llm.eval(llm.tokenize(prompt.encode(), add_bos=False))
        drawn = []
        for seed in range(40):
            for temperature in (0.0, 0.7, 1.5):
                llm.set_seed(seed)
                params = SamplingParams(temperature=temperature, top_p=0.95, min_p=0.01)
                full = answer_sampler(llm, params, grammar, None)
                llm.set_seed(seed)
                shrunk = answer_sampler(llm, params, grammar, candidates)
                pair = (full.sample(llm._ctx, -1), shrunk.sample(llm._ctx, -1))
                assert pair[0] == pair[1], (seed, temperature, pair)
                drawn.append(pair[0])
        engine.forget()
    assert len(set(drawn)) > 2  # the draws really vary with the seed
