"""A batch-first client for OpenAI-compatible chat servers (vLLM, llama.cpp's server, ...).

One `generate` call sends a whole batch concurrently: at most `max_concurrency` requests in flight
per endpoint, each request to the endpoint with the fewest outstanding requests. Connection
errors, 429 and 5xx are retried with exponential backoff; what still fails is recorded on its
result (error_kind "model_error" or "timeout"), never raised, so one bad request never loses the
batch. Output constraints go through the server's own structured-output parameter.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Sequence
from typing import Any, Literal

import httpx

from workbench.config import ModelSpec
from workbench.errors import ConfigError, ModelError
from workbench.llm.base import (
    ChatModel,
    ChatRequest,
    ChatResult,
    OutputConstraint,
    SamplingParams,
    report_answered,
)
from workbench.llm.grammar import integer_range_grammar, integer_range_regex

StructuredOutput = Literal["grammar", "structured_outputs", "guided_regex", "json_schema", "none"]
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class _Retryable(Exception):
    """A failure worth another attempt (connection error, 429, 5xx)."""


class OpenAICompatModel(ChatModel):
    """A `ChatModel` speaking the OpenAI chat completions API to one or more endpoints."""

    def __init__(
        self,
        base_urls: Sequence[str],
        name: str,
        *,
        api_key: str | None = None,
        structured_output: StructuredOutput = "grammar",
        max_concurrency: int = 32,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.2,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not base_urls:
            raise ConfigError("model.base_urls: give at least one endpoint")
        self.base_urls = [u.rstrip("/") for u in base_urls]
        self.name = name
        self.structured_output: StructuredOutput = structured_output
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._api_key = api_key
        self._transport = transport
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self.stats: dict[str, Any] = {
            "requests": 0,
            "retries": 0,
            "errors": 0,
            "in_flight": dict.fromkeys(self.base_urls, 0),
        }

    @classmethod
    def from_spec(cls, spec: ModelSpec) -> OpenAICompatModel:
        """The client a `ModelSpec(kind="openai")` describes; its key read from the environment."""
        key = None
        if spec.api_key_env is not None:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise ConfigError(
                    f"model.api_key_env: environment variable {spec.api_key_env!r} is not set; "
                    "export the API key there (it is never written to bundles or logs)"
                )
        return cls(
            spec.base_urls,
            spec.name or "",
            api_key=key,
            structured_output=spec.structured_output,
            max_concurrency=spec.max_concurrency,
            timeout_s=spec.timeout_s,
            max_retries=spec.max_retries,
        )

    @property
    def identity(self) -> dict[str, Any]:
        """Endpoint(s), served model name and constraint mode (never the API key)."""
        return {
            "engine": "openai-compatible",
            "name": self.name,
            "base_urls": list(self.base_urls),
            "structured_output": self.structured_output,
        }

    def _client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        limits = httpx.Limits(max_connections=self.max_concurrency * len(self.base_urls))
        return httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=limits,
            transport=self._transport,
        )

    async def check(self) -> None:
        """Fail early and clearly: every endpoint answers and serves the model `name`."""
        async with self._client() as client:
            for base in self.base_urls:
                try:
                    response = await client.get(f"{base}/models", timeout=min(self.timeout_s, 10))
                except httpx.HTTPError as exc:
                    raise ModelError(
                        f"model.base_urls: cannot reach {base} ({type(exc).__name__}: {exc}); "
                        "is the server running?"
                    ) from None
                if response.status_code in (401, 403):
                    raise ModelError(
                        f"{base}: HTTP {response.status_code}; the API key is missing or wrong "
                        "(set model.api_key_env)"
                    )
                if response.status_code != 200:
                    raise ModelError(f"{base}/models: HTTP {response.status_code}")
                try:
                    served = [m.get("id") for m in response.json().get("data", [])]
                except (ValueError, AttributeError, TypeError):
                    raise ModelError(f"{base}/models: not an OpenAI model list") from None
                if self.name not in served:
                    raise ModelError(
                        f"model.name: {self.name!r} is not served by {base}; it serves {served}"
                    )

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Every request of the batch, concurrently; results in input order."""
        async with self._client() as client:
            return list(
                await asyncio.gather(*(self._reported(client, r, params) for r in requests))
            )

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

    def _pick(self, avoid: str | None) -> str:
        """The endpoint with the fewest requests in flight that has room, avoiding a failed one."""
        in_flight = self.stats["in_flight"]
        room = [b for b in self.base_urls if in_flight[b] < self.max_concurrency]
        preferred = [b for b in room if b != avoid] or room or self.base_urls
        return min(preferred, key=lambda base: in_flight[base])

    def body(self, request: ChatRequest, params: SamplingParams) -> dict[str, Any]:
        """The JSON body of one chat completion request."""
        body: dict[str, Any] = {
            "model": self.name,
            "messages": list(request.messages),
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "seed": request.seed,
        }
        body.update(self._constraint(request.constraint))
        return body

    def _constraint(self, constraint: OutputConstraint | None) -> dict[str, Any]:
        if constraint is None or self.structured_output == "none":
            return {}
        if constraint.integer_range is not None:
            low, high = constraint.integer_range
            grammar = integer_range_grammar(low, high)
            regex = integer_range_regex(low, high)
            schema = {"type": "integer", "minimum": low, "maximum": high}
        else:
            grammar, regex, schema = constraint.grammar, constraint.regex, constraint.json_schema
        if self.structured_output == "grammar" and grammar is not None:
            return {"grammar": grammar}
        if self.structured_output == "structured_outputs" and regex is not None:
            return {"structured_outputs": {"regex": regex}}
        if self.structured_output == "guided_regex" and regex is not None:
            return {"guided_regex": regex}
        if self.structured_output == "json_schema" and schema is not None:
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema},
                }
            }
        return {}

    async def _one(
        self, client: httpx.AsyncClient, request: ChatRequest, params: SamplingParams
    ) -> ChatResult:
        body = self.body(request, params)
        error, failed_on = "no attempt made", None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.stats["retries"] += 1
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
            async with self._slots():
                base = self._pick(avoid=failed_on)
                self.stats["in_flight"][base] += 1
                self.stats["requests"] += 1
                start = time.perf_counter()  # latency of this attempt, not of queueing
                try:
                    return self._result(await self._post(client, base, body), start)
                except _Retryable as exc:
                    error, failed_on = str(exc), base
                except httpx.TimeoutException as exc:
                    self.stats["errors"] += 1
                    return _failed(
                        f"timeout after {self.timeout_s:g} s ({exc!r})", "timeout", start
                    )
                except (ModelError, httpx.HTTPError) as exc:
                    self.stats["errors"] += 1
                    return _failed(f"{type(exc).__name__}: {exc}", "model_error", start)
                finally:
                    self.stats["in_flight"][base] -= 1
        self.stats["errors"] += 1
        return _failed(f"{error} (after {self.max_retries + 1} attempts)", "model_error", start)

    async def _post(self, client: httpx.AsyncClient, base: str, body: dict[str, Any]) -> Any:
        url = f"{base}/chat/completions"
        try:
            response = await client.post(url, json=body)
        except httpx.TimeoutException:
            raise
        except httpx.TransportError as exc:
            raise _Retryable(f"{url}: {type(exc).__name__}: {exc}") from None
        if response.status_code in RETRY_STATUS:
            raise _Retryable(f"{url}: HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code != 200:
            raise ModelError(f"{url}: HTTP {response.status_code}: {response.text[:200]}")
        try:
            return response.json()
        except ValueError:
            raise ModelError(f"{url}: the answer is not JSON: {response.text[:200]}") from None

    @staticmethod
    def _result(data: Any, start: float) -> ChatResult:
        try:
            text = data["choices"][0]["message"]["content"]
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
        except (KeyError, IndexError, TypeError, AttributeError, ValueError):
            raise ModelError(f"unexpected answer shape: {str(data)[:200]}") from None
        if not isinstance(text, str):
            raise ModelError(f"the answer has no text: {str(data)[:200]}")
        return ChatResult(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=time.perf_counter() - start,
        )


def _failed(message: str, kind: Literal["model_error", "timeout"], start: float) -> ChatResult:
    return ChatResult(
        text=None, latency_s=time.perf_counter() - start, error=message, error_kind=kind
    )
