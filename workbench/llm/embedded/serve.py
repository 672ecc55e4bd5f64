"""`workbench serve-model`: a real OpenAI-compatible server for the embedded model.

Wraps llama-cpp-python's server (FastAPI + uvicorn) around a GGUF file, the shipped SmolLM2 by
default, bound to 127.0.0.1 unless told otherwise, so the HTTP path is tested against a real
server. Its chat endpoint accepts a llama.cpp `grammar` for constrained answers.

With an API key (`--api-key` or $WORKBENCH_SERVE_API_KEY; required beyond loopback) every
request, the OpenAPI document included, needs `Authorization: Bearer KEY` or gets 401; the key
is compared in constant time. llama-cpp-python's wildcard CORS (any origin, with credentials)
is removed: no web page can call the server from a browser.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

from workbench.llm.embedded.engine import machine_threads, shipped_model_path

DEFAULT_NAME = "smollm2-135m"


class BearerKey:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <key>`."""

    def __init__(self, app: Any, key: str) -> None:
        self.app, self.key = app, key.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.key):
                from starlette.responses import JSONResponse

                refused = JSONResponse(
                    {"error": {"message": "missing or wrong API key", "type": "invalid_api_key"}},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def without_cors(app: Any) -> Any:
    """`app` (a FastAPI app) without its CORS middleware: llama-cpp-python allows any origin
    with credentials, so any web page could drive the server from its visitor's browser."""
    from starlette.middleware.cors import CORSMiddleware

    app.user_middleware = [m for m in app.user_middleware if m.cls is not CORSMiddleware]
    app.middleware_stack = None  # built again from the list on the first request
    return app


def serve_model(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str | Path | None = None,
    name: str = DEFAULT_NAME,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    api_key: str | None = None,
) -> None:
    """Serve a GGUF at http://host:port/v1 under model name `name` (blocks until stopped);
    with `api_key`, only to requests that carry it."""
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    model = str(Path(path) if path is not None else shipped_model_path())
    threads = n_threads or machine_threads()
    app = create_app(
        server_settings=ServerSettings(host=host, port=port),
        model_settings=[
            ModelSettings(
                model=model,
                model_alias=name,
                n_ctx=n_ctx,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
        ],
    )
    served = without_cors(app)
    uvicorn.run(
        BearerKey(served, api_key) if api_key else served, host=host, port=port, log_level="warning"
    )
