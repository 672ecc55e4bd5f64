"""A scriptable OpenAI-compatible HTTP server on 127.0.0.1 for tests (`FakeServer`).

Its replies are scripted by the test: slow answers, 429 / 5xx / 400, malformed bodies; it keeps
a record of every request. It answers the start-up check's constraint probes as a server that
honours only some constraint modes would, and can pose as vLLM (`owned_by`, `/version`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from workbench.llm.servers import PROBE_MESSAGES, PROBE_VALUE


def completion(text: str, prompt_tokens: int = 7, completion_tokens: int = 2) -> dict[str, Any]:
    """An OpenAI chat.completion answer."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


# --------------------------------------------------------------------------- a scriptable server

Reply = tuple[int, Any] | tuple[int, Any, float]
"""(status, JSON payload or raw bytes[, seconds to wait before answering])."""


class FakeServer:
    """A tiny OpenAI-compatible HTTP server on 127.0.0.1, in a thread; use as a context manager.

    `respond(body, n)` answers the n-th (0-based) POST to /v1/chat/completions; by default every
    answer is "42". The start-up check's constraint probes are answered apart (kept in `probes`,
    not `posts`), as a server that honours only the modes in `honours` would answer them.
    GET /v1/models lists `model` (`owned_by`), GET /version gives `version` when set. Every
    request is kept in `posts` / `gets` (path, headers, body); `peak` is the most POSTs it was
    handling at once. A waiting reply ends early when the server stops, so no test waits on it.
    """

    def __init__(
        self,
        respond: Callable[[dict, int], Reply] | None = None,
        *,
        model: str = "fake",
        honours: tuple[str, ...] = ("grammar",),
        owned_by: str = "test",
        version: str | None = None,
    ) -> None:
        self.respond = respond or (lambda body, n: (200, completion("42")))
        self.model = model
        self.honours = honours
        self.owned_by = owned_by
        self.version = version
        self.probes: list[dict[str, Any]] = []
        self.posts: list[dict[str, Any]] = []
        self.gets: list[dict[str, Any]] = []
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._http is not None
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> FakeServer:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def do_GET(self) -> None:
                with fake.lock:
                    fake.gets.append({"path": self.path, "headers": dict(self.headers)})
                if self.path.rstrip("/") == "/v1/models":
                    models = [{"id": fake.model, "object": "model", "owned_by": fake.owned_by}]
                    self._send(200, {"object": "list", "data": models})
                elif self.path == "/version" and fake.version is not None:
                    self._send(200, {"version": fake.version})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                if body and body.get("messages") == list(PROBE_MESSAGES):
                    with fake.lock:
                        fake.probes.append(body)
                    honoured = probe_mode(body) in fake.honours
                    self._send(200, completion(str(PROBE_VALUE) if honoured else "apple"))
                    return
                with fake.lock:
                    n = len(fake.posts)
                    fake.posts.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    fake.active += 1
                    fake.peak = max(fake.peak, fake.active)
                try:
                    reply = fake.respond(body, n)
                    if len(reply) == 3 and reply[2] > 0:
                        fake.stopping.wait(reply[2])
                finally:
                    # counted out before answering, so `peak` never exceeds the client's own
                    # count of requests in flight
                    with fake.lock:
                        fake.active -= 1
                self._send(reply[0], reply[1])

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        assert self._http is not None and self._thread is not None
        self._http.shutdown()
        self._http.server_close()  # joins the handler threads (none waits past `stopping`)
        self._thread.join(timeout=10)

    @property
    def chat_posts(self) -> list[dict[str, Any]]:
        return [p for p in self.posts if p["path"] == "/v1/chat/completions"]


def probe_mode(body: dict) -> str | None:
    """The constraint mode a request body uses (None: unconstrained)."""
    for key in ("grammar", "structured_outputs", "guided_regex"):
        if key in body:
            return key
    return "json_schema" if "response_format" in body else None
