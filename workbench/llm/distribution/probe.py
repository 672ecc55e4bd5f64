"""The start-up probe of distribution mode on a server: may the workbench draw answers from this
server's node probabilities, and are those probabilities the same whatever the server batches?

Every endpoint must be a vLLM that gives log-probabilities of chosen tokens under a greedy step,
and at temperature 0 the workbench's draw from them must be the server's own constrained greedy
answer (and each node's greedy token the likeliest allowed one). Otherwise `auto` falls back to
the server's sampling, the reason recorded in the identity, and `workbench` is refused naming
`model.sampling`. Where the probe passes, `invariance` measures whether a node's
log-probabilities depend on what else the server batches or has cached, and the manifest records
it (`batch_invariant`).
"""

from __future__ import annotations

import secrets
from typing import Any

import httpx
import numpy as np

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.distribution.scorer import Node
from workbench.llm.distribution.served_scorer import (
    HttpNodes,
    IntegerTokens,
    ServedModel,
    ServedNodeScorer,
)
from workbench.llm.distribution.walk import PromptGroup, draw_answers
from workbench.llm.servers import constraint_body, probe_answer

PROBE_RANGE = (0, 100)
PROBE_REQUEST = ChatRequest(
    ({"role": "user", "content": "Pick a whole number from 0 to 100. Reply with the number."},),
    constraint=OutputConstraint(integer_range=PROBE_RANGE),
)
PROBE_PARAMS = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=8)
INVARIANCE_BATCH = 8
"""Prompts in the batch a node is asked inside (the others are neighbours of it)."""


async def resolve_sampling(
    model: ServedModel, client: httpx.AsyncClient
) -> tuple[ServedNodeScorer | None, str | None]:
    """(a scorer over every endpoint, None) when every endpoint passes the probe; otherwise
    (None, why) for `auto`, and a ModelError naming `model.sampling` for `workbench`."""
    reasons = []
    tokens: IntegerTokens | None = None
    for base in model.base_urls:
        server = model.servers.get(base)
        where = f"{base} ({server.describe() if server else 'unknown server'})"
        why, tokens = await _refusal(model, client, base, tokens)
        if why is not None:
            reasons.append(f"{where}: {why}")
    if not reasons:
        scorer = ServedNodeScorer(HttpNodes(model))
        scorer.tokens = tokens
        for base in model.base_urls:
            pinned = ServedNodeScorer(HttpNodes(model, base))
            pinned.tokens = tokens
            scorer.invariance[base] = await invariance(pinned, client)
        return scorer, None
    why = "; ".join(reasons)
    if model.sampling == "workbench":
        raise ModelError(
            f"model.sampling: workbench needs next-token probabilities the workbench can draw "
            f"from, and {why}; set model.sampling: server (or auto)"
        )
    return None, why


async def _refusal(
    model: ServedModel, client: httpx.AsyncClient, base: str, tokens: IntegerTokens | None
) -> tuple[str | None, IntegerTokens | None]:
    """Why `base` cannot score nodes (None: it can), and the integer tokens read there."""
    server = model.servers.get(base)
    if server is None or server.kind != "vllm":
        kind = server.kind if server else "this server"
        return (
            f"{kind} gives no log-probabilities of chosen tokens under a greedy step (vLLM's "
            "allowed_token_ids with logprob_token_ids), so it samples itself",
            tokens,
        )
    mode = model.modes.get(base)
    if mode is None:
        return "no constraint mode to compare the server's own greedy answer with", tokens
    source = HttpNodes(model, base)
    scorer = ServedNodeScorer(source)
    scorer.tokens = tokens
    uniforms = lambda ids, depth: np.zeros(len(ids))  # noqa: E731 - greedy: never read
    group = PromptGroup(PROBE_REQUEST, np.zeros(1, dtype=np.int64))
    try:
        (drawn,) = await draw_answers(scorer, [group], PROBE_PARAMS, uniforms)
    except ModelError as exc:
        return f"its probe's prompt could not be tokenized ({exc})", tokens
    if drawn.error is not None:
        return f"its probe's answer trie could not be scored ({drawn.error})", scorer.tokens
    ours = drawn.texts[int(drawn.leaf[0])]
    body = {
        "model": model.name,
        "messages": list(PROBE_REQUEST.messages),
        "temperature": 0.0,
        "max_tokens": PROBE_PARAMS.max_tokens,
        **constraint_body(mode, PROBE_REQUEST.constraint),
    }
    try:
        theirs = await source.post(client, "/chat/completions", body, probe_answer)
    except ModelError as exc:
        return f"its own greedy answer to the probe failed ({exc})", scorer.tokens
    if theirs != ours:
        return (
            f"at temperature 0 the workbench drew {ours!r} from its probabilities and the "
            f"server itself answered {theirs!r}",
            scorer.tokens,
        )
    if scorer.disagreements:
        why = f"its greedy tokens disagree with its probabilities: {scorer.disagreements[0]}"
        return why, scorer.tokens
    return None, scorer.tokens


async def invariance(scorer: ServedNodeScorer, client: Any) -> dict[str, Any]:
    """Whether one engine's node log-probabilities are the same however it is asked: one node
    alone on a cold prefix cache (its prompt carries a fresh nonce), the same node again
    (warm), and inside a batch of `INVARIANCE_BATCH` prompts; compared bitwise. GPUs are not
    batch invariant by default, and a prefix-cache hit can shift a node's logits too: the
    answers are then exact draws from what the server returned, but a rerun may differ."""
    nonce = secrets.token_hex(6)
    asks = [
        ChatRequest(
            (
                {
                    "role": "user",
                    "content": f"Probe {nonce}-{i}. {PROBE_REQUEST.messages[0]['content']}",
                },
            ),
            constraint=PROBE_REQUEST.constraint,
        )
        for i in range(INVARIANCE_BATCH)
    ]
    try:
        vocab = await scorer.vocabulary(*PROBE_RANGE)
        prompts = await scorer.prompt_tokens(asks)
        allowed = vocab.allowed("")
        nodes = [Node(p, (), allowed) for p in prompts]
        (cold,) = await scorer._nodes(client, [nodes[0]])
        (warm,) = await scorer._nodes(client, [nodes[0]])
        batched = (await scorer._nodes(client, [*nodes[1:], nodes[0]]))[-1]
    except ModelError as exc:
        return {"batch_invariant": "unknown", "why": f"the probe failed: {exc}"}
    cache = float(np.max(np.abs(cold - warm)))
    batch = float(np.max(np.abs(warm - batched)))
    same = np.array_equal(cold, warm) and np.array_equal(warm, batched)
    return {
        "batch_invariant": "yes" if same else "no",
        "cold_vs_warm_max_diff": cache,
        f"alone_vs_batch_of_{INVARIANCE_BATCH}_max_diff": batch,
    }
