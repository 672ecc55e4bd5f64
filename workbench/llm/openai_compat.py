"""A batch-first client for OpenAI-compatible chat servers (vLLM, llama.cpp's server, ...).

One `generate` call sends a whole batch concurrently: at most `max_concurrency` requests in flight
per endpoint, each request to the endpoint with the fewest outstanding requests (in distribution
mode with several endpoints, a node request to its prompt's endpoint in the round's plan:
`llm.endpoints`). Connection errors, 429 and 5xx are retried with exponential backoff (a retry
avoids the endpoint that failed); what still fails is recorded on its result (error_kind
"model_error" or "timeout"), never raised, so one bad request never loses the batch. Output
constraints go through the server's own structured-output parameter.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any, Literal, TypeVar

import httpx

from workbench.config import ModelSpec
from workbench.errors import ConfigError, ModelError
from workbench.llm.base import (
    Attempt,
    ChatRequest,
    ChatResult,
    SamplingParams,
    report_answered,
)
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.probe import resolve_sampling
from workbench.llm.distribution.served_scorer import HttpNodes, ServedNodeScorer
from workbench.llm.endpoints import Endpoints
from workbench.llm.key_policy import api_key_for
from workbench.llm.servers import (
    CONSTRAINT_MODES,
    AnswerShapeError,
    ConstraintMode,
    Exchanged,
    ServerInfo,
    constraint_body,
    identify,
    proven_mode,
    root_of,
    served_by,
    server_error,
    summarize_attempts,
)

StructuredOutput = Literal[
    "auto", "grammar", "structured_outputs", "guided_regex", "json_schema", "none"
]
SeedMode = Literal["per_request", "none"]
SamplingMode = Literal["auto", "workbench", "server"]
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
T = TypeVar("T")


class _AttemptFailed(Exception):
    """One attempt that failed: its message, the HTTP status (None: no answer) and whether
    another attempt is worth it (connection errors, 429, 5xx)."""

    def __init__(self, message: str, status: int | None, retry: bool) -> None:
        super().__init__(message)
        self.status = status
        self.retry = retry


class OpenAICompatModel(ChatModel):
    """A `ChatModel` speaking the OpenAI chat completions API to one or more endpoints.

    `structured_output="auto"` finds, per endpoint, the constraint mode the server honours (see
    `workbench.llm.servers`); a named mode is proven by the same probe and refused when the
    server ignores it; `"none"` sends answers unconstrained, while extraction calls
    (`step="extract"`) stay constrained wherever the server honours a mode. `seed="none"` sends
    no per-request seed. `sampling` chooses who draws constrained integer answers: the server
    (one generation per agent), or the workbench from the node probabilities the server gives
    (distribution mode, `distribution.served_scorer`), which the start-up check proves or refuses
    (`auto` falls back to the server and records why).
    """

    def __init__(
        self,
        base_urls: Sequence[str],
        name: str,
        *,
        api_key: str | None = None,
        structured_output: StructuredOutput = "auto",
        seed: SeedMode = "per_request",
        max_concurrency: int = 32,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
        sampling: SamplingMode = "auto",
    ) -> None:
        if not base_urls:
            raise ConfigError("model.base_urls: give at least one endpoint")
        self.base_urls = [u.rstrip("/") for u in base_urls]
        self.name = name
        self.structured_output: StructuredOutput = structured_output
        self.seed: SeedMode = seed
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._api_key = api_key
        self._transport = transport
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._rooms: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]
        ] = weakref.WeakKeyDictionary()
        self.servers: dict[str, ServerInfo] = {}
        """What serves each endpoint, once `check()` (or the first batch) has asked."""
        self.modes: dict[str, ConstraintMode | None] = {}
        """The constraint mode each endpoint honours (None: none found), once resolved."""
        if structured_output in CONSTRAINT_MODES:  # trusted until check() proves it
            self.modes = dict.fromkeys(self.base_urls, structured_output)
        self.sampling: SamplingMode = sampling
        self.sampling_mode: Literal["workbench", "server"] | None = (
            "server" if sampling == "server" else None
        )
        """Who draws constrained answers, once resolved (None: not yet)."""
        self.sampling_why: str | None = None
        """Why `auto` fell back to the server's sampling."""
        self._scorer: ServedNodeScorer | None = None
        self._endpoints: Endpoints | None = None
        self._resolved = False
        self.stats: dict[str, Any] = {
            "requests": 0,
            "retries": 0,
            "errors": 0,
            "in_flight": dict.fromkeys(self.base_urls, 0),
        }

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAICompatModel:
        """The client a `ModelSpec(kind="openai")` describes; its key read from the environment
        where the key policy in force allows it (`workbench.llm.key_policy`)."""
        key = api_key_for(spec.api_key_env, spec.base_urls)
        return cls(
            spec.base_urls,
            spec.name or "",
            api_key=key,
            structured_output=spec.structured_output,
            seed=spec.seed,
            max_concurrency=spec.max_concurrency,
            timeout_s=spec.timeout_s,
            max_retries=spec.max_retries,
            sampling=spec.sampling,
        )

    @property
    def identity(self) -> dict[str, Any]:
        """Endpoint(s), served model name, constraint and seed modes, and (once checked) each
        endpoint's server, version and the constraint mode it honours; never the API key."""
        out: dict[str, Any] = {
            "engine": "openai-compatible",
            "name": self.name,
            "base_urls": list(self.base_urls),
            "structured_output": self.structured_output,
            "seed": self.seed,
        }
        if self.servers:
            out["servers"] = {
                base: {
                    **server.as_dict(),
                    "constraint": self.modes.get(base),
                    "sampling_law": server.law_followed(),
                    **(
                        {"invariance": self._scorer.invariance[base]}
                        if self._scorer is not None and base in self._scorer.invariance
                        else {}
                    ),
                }
                for base, server in self.servers.items()
            }
        out["sampling"] = self.sampling_identity()
        return out

    def sampling_identity(self) -> dict[str, Any]:
        """Who draws constrained answers: the workbench's sampler over the server's node
        probabilities, or the server's own sampler (and why, when `auto` fell back to it)."""
        out: dict[str, Any] = {"requested": self.sampling}
        scorer = self.node_scorer()
        if scorer is not None:
            return {**out, **scorer.sampling_identity()}
        if self.sampling_mode is None:
            return {"mode": None, **out, "note": "decided by the start-up check"}
        out = {"mode": "server", **out, "sampler": "the server's own, one generation per agent"}
        if self.sampling_why:
            out["why"] = self.sampling_why
        return out

    def node_scorer(self) -> ServedNodeScorer | None:
        """Distribution mode's node scorer on this server: when the start-up check proved it
        (`workbench` is trusted until a check runs); None when the server samples."""
        mode = self.sampling_mode or ("workbench" if self.sampling == "workbench" else None)
        if mode != "workbench":
            return None
        if self._scorer is None:
            self._scorer = ServedNodeScorer(HttpNodes(self))
        return self._scorer

    def endpoints(self) -> Endpoints | None:
        """With several endpoints in distribution mode, the endpoints a round's plan divides
        the prompts over (`llm.endpoints`); None otherwise."""
        if len(self.base_urls) < 2 or self.node_scorer() is None:
            return None
        if self._endpoints is None:
            self._endpoints = Endpoints(self, self.node_scorer)
        return self._endpoints

    def load(self) -> OpenAICompatModel:
        """In a process whose copy of the model was never checked (a shard actor's), run the
        start-up check now, so that it draws answers the way the driver's check decided
        (`sampling` auto); a failure is left to the first batch to report. Returns self."""
        if self._resolved or self.sampling == "server":
            return self
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # this thread may run a loop
            try:
                pool.submit(asyncio.run, self.check()).result()
            except ModelError:
                pass
        return self

    def client(self) -> httpx.AsyncClient:
        """A client for this model's endpoints (its key, timeout and connection limits)."""
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        limits = httpx.Limits(max_connections=self.max_concurrency * len(self.base_urls))
        return httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=limits,
            transport=self._transport,
        )

    async def check(self) -> None:
        """Fail early and clearly, before anything is written: every endpoint answers, serves
        the model `name`, and honours the constraint mode (auto: finds one; see the class)."""
        async with self.client() as client:
            await self._resolve(client)

    async def _resolve(self, client: httpx.AsyncClient) -> None:
        """Identify every endpoint's server and prove its constraint mode with a probe."""
        servers: dict[str, ServerInfo] = {}
        modes: dict[str, ConstraintMode | None] = {}
        for base in self.base_urls:
            owner = await served_by(client, base, self.name, min(self.timeout_s, 10))
            servers[base] = await identify(client, base, owner)
            modes[base] = await proven_mode(
                client, base, self.name, self.structured_output, servers[base]
            )
        self.servers, self.modes = servers, modes
        if self.sampling != "server":
            self._scorer, self.sampling_why = await resolve_sampling(self, client)
            self.sampling_mode = "workbench" if self._scorer is not None else "server"
        self._resolved = True

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Every request of the batch, concurrently; results in input order.

        In a process that never ran `check()` (a Ray actor's copy), the first batch resolves the
        constraint modes first; if that fails, the batch's results carry the reason."""
        async with self.client() as client:
            if not self._resolved and self.structured_output in ("auto", "none"):
                try:
                    await self._resolve(client)
                except ModelError as exc:
                    if self.structured_output == "auto":
                        return [self._reported_failure(r, str(exc)) for r in requests]
                    self._resolved = True  # none: extraction calls go unconstrained
            return list(
                await asyncio.gather(*(self._reported(client, r, params) for r in requests))
            )

    @staticmethod
    def _reported_failure(request: ChatRequest, message: str) -> ChatResult:
        result = ChatResult(text=None, error=message, error_kind="model_error")
        report_answered(request, result)
        return result

    async def _reported(
        self, client: httpx.AsyncClient, request: ChatRequest, params: SamplingParams
    ) -> ChatResult:
        result = await self._one(client, request, params)
        report_answered(request, result)
        return result

    def _slots(self) -> asyncio.Semaphore:
        """This event loop's limit on requests in flight over all endpoints (shared by calls)."""
        loop = asyncio.get_running_loop()
        if loop not in self._limits:
            self._limits[loop] = asyncio.Semaphore(self.max_concurrency * len(self.base_urls))
        return self._limits[loop]

    def _room(self, base: str | None) -> AbstractAsyncContextManager[object]:
        """This event loop's limit on requests routed to endpoint `base` (`max_concurrency`),
        taken before the shared one; nothing to wait for when none is routed."""
        if base is None:
            return nullcontext()
        loop = asyncio.get_running_loop()
        rooms = self._rooms.setdefault(loop, {})
        if base not in rooms:
            rooms[base] = asyncio.Semaphore(self.max_concurrency)
        return rooms[base]

    def _pick(self, avoid: str | None) -> str:
        """The endpoint with the fewest requests in flight that has room, avoiding a failed one."""
        in_flight = self.stats["in_flight"]
        room = [b for b in self.base_urls if in_flight[b] < self.max_concurrency]
        preferred = [b for b in room if b != avoid] or room or self.base_urls
        return min(preferred, key=lambda base: in_flight[base])

    def body(
        self, request: ChatRequest, params: SamplingParams, base: str | None = None
    ) -> dict[str, Any]:
        """The JSON body of one chat completion request to endpoint `base` (the first one
        when not given): its constraint in the mode that endpoint honours."""
        body: dict[str, Any] = {
            "model": self.name,
            "messages": list(request.messages),
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
        }
        server = self.servers.get(base or self.base_urls[0])
        if server is not None:
            body.update(server.law_body(params))
        if self.seed == "per_request":
            body["seed"] = request.seed
        body.update(constraint_body(self.mode_for(request, base), request.constraint))
        return body

    def mode_for(self, request: ChatRequest, base: str | None = None) -> ConstraintMode | None:
        """How `request`'s constraint goes to `base`: its endpoint's mode, except that with
        `structured_output: none` only extraction calls are constrained."""
        if self.structured_output == "none" and request.step != "extract":
            return None
        return self.modes.get(base or self.base_urls[0])

    async def _one(
        self, client: httpx.AsyncClient, request: ChatRequest, params: SamplingParams
    ) -> ChatResult:
        """One chat request through `exchange`: its result, every attempt kept."""
        done = await self.exchange(
            client, "/chat/completions", lambda base: self.body(request, params, base), self._result
        )
        if done.value is None:
            return _failed(done.attempts, done.error_kind or "model_error", done.first)
        done.value.latency_s = time.perf_counter() - (done.first or 0.0)
        done.value.attempts = tuple(done.attempts)
        return done.value

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
    ) -> Exchanged[T]:
        """One POST of `path` (under an endpoint's base URL, or its server root with `root`),
        the body built for the endpoint picked (`base` pins one; `prefer` takes the first
        attempt, once that endpoint has room, and a retry goes where it would without it), its
        JSON answer `parse`d (which raises `AnswerShapeError` on a malformed one); retried on
        connection errors, 429 and 5xx within the shared limit on requests in flight. Chat
        requests and distribution mode's node requests both go through here."""
        attempts: list[Attempt] = []
        first: float | None = None
        failed_on: str | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats["retries"] += 1
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            routed = prefer if base is None and failed_on is None else None
            async with self._room(routed), self._slots():
                where = base or routed or self._pick(avoid=failed_on)
                self.stats["in_flight"][where] += 1
                self.stats["requests"] += 1
                start = time.perf_counter()  # latency of the attempts, not of queueing
                first = start if first is None else first
                url = f"{root_of(where) if root else where}{path}"
                try:
                    value = parse(await self._post(client, url, body_for(where)))
                    attempts.append(Attempt(where, 200, None, time.perf_counter() - start))
                    return Exchanged(value, attempts, first)
                except AnswerShapeError as exc:
                    attempts.append(Attempt(where, 200, str(exc), time.perf_counter() - start))
                    break
                except _AttemptFailed as exc:
                    seconds = time.perf_counter() - start
                    attempts.append(Attempt(where, exc.status, str(exc), seconds))
                    failed_on = where
                    if not exc.retry:
                        break
                except httpx.TimeoutException as exc:
                    message = f"{where}: timeout after {self.timeout_s:g} s ({type(exc).__name__})"
                    attempts.append(Attempt(where, None, message, time.perf_counter() - start))
                    self.stats["errors"] += 1
                    return Exchanged(None, attempts, first, "timeout")
                finally:
                    self.stats["in_flight"][where] -= 1
        self.stats["errors"] += 1
        return Exchanged(None, attempts, first, "model_error")

    async def _post(self, client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> Any:
        try:
            response = await client.post(url, json=body)
        except httpx.TimeoutException:
            raise
        except httpx.TransportError as exc:
            raise _AttemptFailed(f"{url}: {type(exc).__name__}: {exc}", None, True) from None
        if response.status_code != 200:
            retry = response.status_code in RETRY_STATUS
            message = f"{url}: HTTP {response.status_code}: {server_error(response)}"
            raise _AttemptFailed(message, response.status_code, retry)
        try:
            return response.json()
        except ValueError:
            message = f"{url}: the answer is not JSON: {response.text[:200]}"
            raise _AttemptFailed(message, 200, False) from None

    @staticmethod
    def _result(data: Any) -> ChatResult:
        try:
            text = data["choices"][0]["message"]["content"]
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise AnswerShapeError(f"unexpected answer shape: {str(data)[:200]}") from None
        if not isinstance(text, str):
            raise AnswerShapeError(f"the answer has no text: {str(data)[:200]}")
        return ChatResult(
            text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )


def _failed(
    attempts: Sequence[Attempt], kind: Literal["model_error", "timeout"], first: float | None
) -> ChatResult:
    """A failed request: its most informative error, every attempt, the whole latency."""
    latency = 0.0 if first is None else time.perf_counter() - first
    return ChatResult(
        text=None,
        latency_s=latency,
        error=summarize_attempts(attempts),
        error_kind=kind,
        attempts=tuple(attempts),
    )
