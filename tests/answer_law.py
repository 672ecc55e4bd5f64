"""An answer's exact distribution under the one sampling law, and goodness-of-fit tests of
drawn answers against it: shared by the distribution-mode and one-law tests."""

from __future__ import annotations

import numpy as np
from sampler_rule import reference as sampler_rule
from scipy import stats

from workbench.llm.base import ChatRequest, SamplingParams
from workbench.llm.embedded.engine import chat_tokens, last_logits
from workbench.llm.llamacpp import LlamaCppModel


def expected_answers(
    model: LlamaCppModel,
    request: ChatRequest,
    params: SamplingParams,
    rule=sampler_rule,
    canonical: bool = False,
) -> dict[str, float]:
    """Every answer's probability, walked node by node with the law written out with loops
    (`sampler_rule.reference`). A node's logits come from llama.cpp's plain `eval` of the
    prompt and prefix in one batch from a cleared context; with `canonical`, from the engine's
    own evaluation (the prompt in its canonical pieces, each answer token alone: the scorer's
    `_alone`), which is what both the answer trie and per-agent generation sample from."""
    scorer = model.node_scorer()
    vocab = scorer._vocabulary(*request.constraint.integer_range)
    engine = model.engine
    llm = engine.llm
    tokens, _ = chat_tokens(llm, engine.formatter, request)
    out: dict[str, float] = {}

    def node_logits(prefix: list[int], allowed: np.ndarray) -> list[float]:
        if canonical:
            full = scorer._alone(engine, (tuple(tokens), tuple(prefix)))
        else:
            engine.forget()
            llm.eval(tokens + prefix)
            full = last_logits(llm)
        return full[allowed].astype(np.float64).tolist()

    def visit(prefix: list[int], text: str, p: float) -> None:
        if len(prefix) == params.max_tokens or (text and not vocab.can_continue(text)):
            out[text] = out.get(text, 0.0) + p
            return
        allowed = vocab.allowed(text)
        logits = node_logits(prefix, allowed)
        for position, q in rule(
            logits, params.temperature, params.top_p, params.top_k, params.min_p
        ).items():
            token = int(allowed[position])
            if vocab.is_end(token):
                out[text] = out.get(text, 0.0) + p * q
            else:
                visit([*prefix, token], text + vocab.piece(token), p * q)

    with engine.lock:
        engine.forget()
        visit([], "", 1.0)
        engine.forget()
    return out


def chi_square_p(observed: dict[str, int], expected: dict[str, float], n: int) -> float:
    """Pearson's test over answers expected at least 5 times, the rest pooled (asserting that
    next to nothing was drawn where the law puts no mass)."""
    big = [a for a, p in expected.items() if p * n >= 5]
    obs = [observed.get(a, 0) for a in big]
    exp = [expected[a] * n for a in big]
    rest_obs = n - sum(obs)
    rest_exp = n - sum(exp)
    if rest_exp >= 5:
        obs.append(rest_obs)
        exp.append(rest_exp)
    else:
        assert rest_obs <= 5 + 3 * rest_exp  # nothing drawn where the model puts no mass
        exp = [e * sum(obs) / sum(exp) for e in exp]
    return float(stats.chisquare(obs, exp).pvalue)
