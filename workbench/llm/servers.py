"""Which OpenAI-compatible server answers at an endpoint, and which constraint mode it honours.

Servers do not agree on how a constraint is sent, and several ignore the ones they do not know
without an error: vLLM ignores llama.cpp's `grammar` field and the removed `guided_regex`;
llama.cpp's servers ignore vLLM's `structured_outputs`. So a mode is trusted only once a probe,
a request constrained to one number its prompt never asks for, comes back as exactly that
number. `identify` tells the server apart from what it publishes (the model list's `owned_by`,
vLLM's `/version`, llama.cpp's `/props`, llama-cpp-python's OpenAPI title). What one exchange
with a server gives back (`Exchanged`, `AnswerShapeError`, `summarize_attempts`) is here too:
the chat client (`openai_compat`) and the node scorer (`distribution.served_scorer`) both read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import httpx

from workbench.errors import ModelError
from workbench.llm.base import Attempt, OutputConstraint, SamplingParams, most_informative
from workbench.llm.grammar import integer_range_grammar, integer_range_regex

ConstraintMode = Literal["grammar", "structured_outputs", "guided_regex", "json_schema"]
CONSTRAINT_MODES: tuple[ConstraintMode, ...] = (
    "structured_outputs",
    "grammar",
    "json_schema",
    "guided_regex",
)
"""Every way a constraint can reach a server (what `structured_output` may name besides auto
and none)."""

PROBE_VALUE = 2718
"""The only answer a probe's constraint allows; its prompt asks for a word instead."""

PROBE_MESSAGES = ({"role": "user", "content": "Write the word apple, and nothing else."},)
PROBE_CONSTRAINT = OutputConstraint(integer_range=(PROBE_VALUE, PROBE_VALUE))

LLAMA_SERVER_ORDER = ["temperature", "min_p", "top_k", "top_p"]
"""The law's order in llama-server's `samplers` (its own default puts the temperature last)."""

STRUCTURED_OUTPUTS_SINCE = (0, 12)
"""vLLM versions before this take `guided_regex`; from it on `structured_outputs`."""


@dataclass(frozen=True)
class ServerInfo:
    """What serves an endpoint: `kind` (vllm, llama.cpp, llama-cpp-python, openai-compatible),
    its version when it publishes one, and the model list's `owned_by`."""

    kind: str
    version: str | None = None
    owned_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The server as plain JSON values (for the manifest)."""
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """E.g. "vllm 0.32.0"."""
        return f"{self.kind} {self.version}" if self.version else self.kind

    def law_body(self, params: SamplingParams) -> dict[str, Any]:
        """The request fields that carry the sampling law's settings beyond temperature and
        top_p, in the names this server takes (`config.sampling`): every setting is sent, so
        no server-side default (a model's generation config) applies."""
        if self.kind == "vllm":  # its own order is the law's
            return {"top_k": params.vllm_top_k, "min_p": params.min_p}
        if self.kind == "llama.cpp":  # llama-server takes the order too
            return {"top_k": params.top_k, "min_p": params.min_p, "samplers": LLAMA_SERVER_ORDER}
        if self.kind == "llama-cpp-python":
            return {"top_k": params.top_k, "min_p": params.min_p}
        return {}

    def law_followed(self) -> str:
        """How far a generation here follows the law (for the manifest)."""
        if self.kind in ("vllm", "llama.cpp"):
            return "yes: every setting sent, in the law's order"
        if self.kind == "llama-cpp-python":
            return (
                "settings sent, but the server applies top-k, top-p and min-p before the "
                "temperature"
            )
        return "temperature and top_p only: the server takes no top_k or min_p"

    def candidate_modes(self) -> tuple[ConstraintMode, ...]:
        """The modes worth probing on this server, the likeliest first."""
        if self.kind == "vllm":
            if _version_tuple(self.version) < STRUCTURED_OUTPUTS_SINCE:
                return ("guided_regex", "json_schema")
            return ("structured_outputs", "json_schema")
        if self.kind in ("llama.cpp", "llama-cpp-python"):
            return ("grammar", "json_schema")
        return ("json_schema", "grammar", "structured_outputs", "guided_regex")


def _version_tuple(version: str | None) -> tuple[int, ...]:
    """(major, minor) of a version string; a large tuple when unknown (assume a new server)."""
    if not version:
        return (10**6,)
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or (10**6,)


def root_of(base_url: str) -> str:
    """The server's root URL: the base URL without its trailing /v1."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


async def identify(client: httpx.AsyncClient, base_url: str, owned_by: str | None) -> ServerInfo:
    """The server at `base_url`, from what it publishes; never raises (unknown: generic)."""
    root = root_of(base_url)

    async def get_json(path: str) -> Any:
        try:
            response = await client.get(f"{root}{path}", timeout=10)
            return response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    if owned_by == "vllm":
        found = await get_json("/version")
        version = found.get("version") if isinstance(found, dict) else None
        return ServerInfo("vllm", str(version) if version else None, owned_by)
    if owned_by == "llamacpp":
        found = await get_json("/props")
        build = found.get("build_info") if isinstance(found, dict) else None
        return ServerInfo("llama.cpp", str(build) if build else None, owned_by)
    found = await get_json("/openapi.json")
    info = found.get("info") if isinstance(found, dict) else None
    if isinstance(info, dict) and "llama.cpp" in str(info.get("title", "")):
        return ServerInfo("llama-cpp-python", str(info.get("version") or "") or None, owned_by)
    return ServerInfo("openai-compatible", None, owned_by)


def constraint_body(mode: ConstraintMode | None, constraint: OutputConstraint | None) -> dict:
    """The request fields that send `constraint` in `mode`; {} when either is None or the
    constraint has no form in that mode."""
    if constraint is None or mode is None:
        return {}
    if constraint.integer_range is not None:
        low, high = constraint.integer_range
        grammar = integer_range_grammar(low, high)
        regex = integer_range_regex(low, high)
        schema: dict[str, Any] | None = {"type": "integer", "minimum": low, "maximum": high}
    else:
        grammar, regex, schema = constraint.grammar, constraint.regex, constraint.json_schema
    if mode == "grammar" and grammar is not None:
        return {"grammar": grammar}
    if mode == "structured_outputs" and regex is not None:
        return {"structured_outputs": {"regex": regex}}
    if mode == "guided_regex" and regex is not None:
        return {"guided_regex": regex}
    if mode == "json_schema" and schema is not None:
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema},
            }
        }
    return {}


def probe_body(name: str, mode: ConstraintMode) -> dict[str, Any]:
    """A greedy chat request whose only allowed answer is PROBE_VALUE, sent in `mode`."""
    return {
        "model": name,
        "messages": list(PROBE_MESSAGES),
        "temperature": 0.0,
        "max_tokens": 8,
        **constraint_body(mode, PROBE_CONSTRAINT),
    }


def probe_answer(data: Any) -> str | None:
    """The text of a probe's answer (stripped, JSON quotes removed); None if it has none."""
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return text.strip().strip('"') if isinstance(text, str) else None


async def served_by(
    client: httpx.AsyncClient, base: str, name: str, timeout_s: float
) -> str | None:
    """Check that `base` answers and serves model `name`; its `owned_by` (who serves it)."""
    try:
        response = await client.get(f"{base}/models", timeout=timeout_s)
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
        listed = [m for m in response.json().get("data", []) if isinstance(m, dict)]
    except (ValueError, AttributeError, TypeError):
        raise ModelError(f"{base}/models: not an OpenAI model list") from None
    served = [m.get("id") for m in listed]
    if name not in served:
        raise ModelError(f"model.name: {name!r} is not served by {base}; it serves {served}")
    owner = next(m.get("owned_by") for m in listed if m.get("id") == name)
    return str(owner) if owner is not None else None


async def proven_mode(
    client: httpx.AsyncClient, base: str, name: str, requested: str, server: ServerInfo
) -> ConstraintMode | None:
    """The constraint mode `base` honours, proven by a probe; ModelError when a named mode
    is ignored (naming one that works) or auto finds none."""
    if requested in CONSTRAINT_MODES:
        answer = await probe(client, base, name, requested)  # type: ignore[arg-type]
        if answer == str(PROBE_VALUE):
            return requested  # type: ignore[return-value]
        others = [m for m in (*server.candidate_modes(), *CONSTRAINT_MODES) if m != requested]
        working = await first_honoured(client, base, name, tuple(dict.fromkeys(others)))
        fix = (
            f"set model.structured_output: {working} (or auto)"
            if working
            else "no constraint mode works there; set model.structured_output: none "
            "(free text, then parsing)"
        )
        raise ModelError(
            f"model.structured_output: {base} ({server.describe()}) ignores "
            f"{requested!r}: a probe allowed to answer only {PROBE_VALUE} answered "
            f"{answer!r}; {fix}"
        )
    found = await first_honoured(client, base, name, server.candidate_modes())
    if found is None and requested == "auto":
        raise ModelError(
            f"model.structured_output: auto found no constraint mode that {base} "
            f"({server.describe()}) honours (probed {list(server.candidate_modes())}); set "
            "model.structured_output: none to play on free text (answers parsed; "
            "policy.extract_number for the paper's extraction call)"
        )
    return found


async def first_honoured(
    client: httpx.AsyncClient, base: str, name: str, modes: Sequence[ConstraintMode]
) -> ConstraintMode | None:
    """The first of `modes` whose probe `base` answers as constrained; None if none."""
    for mode in modes:
        if await probe(client, base, name, mode) == str(PROBE_VALUE):
            return mode
    return None


async def probe(client: httpx.AsyncClient, base: str, name: str, mode: ConstraintMode) -> str:
    """The probe's answer in `mode` (or the server's refusal, e.g. "HTTP 400: ...")."""
    url = f"{base}/chat/completions"
    try:
        response = await client.post(url, json=probe_body(name, mode))
    except httpx.HTTPError as exc:
        raise ModelError(
            f"model.base_urls: {url} failed a probe request ({type(exc).__name__}: {exc}); "
            "is the server running?"
        ) from None
    if response.status_code != 200:
        return f"HTTP {response.status_code}: {server_error(response)}"
    try:
        answer = probe_answer(response.json())
    except ValueError:
        answer = None
    return answer if answer is not None else f"no answer text: {response.text[:100]}"


ERROR_TEXT_LIMIT = 300
"""Characters of a server's error answer kept in a recorded error."""


def server_error(response: httpx.Response) -> str:
    """The server's own error text: the message of an OpenAI-style error body, else the body."""
    try:
        data = response.json()
    except ValueError:
        return response.text[:ERROR_TEXT_LIMIT]
    if isinstance(data, dict):
        error = data.get("error", data)
        message = error.get("message") if isinstance(error, dict) else error
        message = message if message is not None else data.get("detail")
        if message is not None:
            return str(message)[:ERROR_TEXT_LIMIT]
    return response.text[:ERROR_TEXT_LIMIT]


T = TypeVar("T")


class AnswerShapeError(Exception):
    """A 200 answer whose JSON is not what was asked for (not retried)."""


@dataclass
class Exchanged(Generic[T]):
    """What `OpenAICompatModel.exchange` got: the parsed answer (None: it failed, with
    `error_kind`), every attempt, and when the first began."""

    value: T | None
    attempts: list[Attempt] = field(default_factory=list)
    first: float | None = None
    error_kind: Literal["model_error", "timeout"] | None = None


def summarize_attempts(attempts: Sequence[Attempt]) -> str:
    """One error for a request's failed attempts: the most informative one (see
    `most_informative`), and how the others went when there were several."""
    errors = [a.error for a in attempts]
    best = most_informative(errors) or "no attempt made"
    if len(attempts) <= 1:
        return best
    last = errors[-1]
    if best == last:
        return f"{best} (after {len(attempts)} attempts)"
    return f"{best} (attempt {errors.index(best) + 1} of {len(attempts)}; the last: {last})"
