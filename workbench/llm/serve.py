"""`workbench serve-model`: a real OpenAI-compatible server for the embedded model.

Wraps llama-cpp-python's server (FastAPI + uvicorn) around a GGUF file, the shipped SmolLM2 by
default, bound to 127.0.0.1 unless told otherwise, so the HTTP path is tested against a real
server. Its chat endpoint accepts a llama.cpp `grammar` for constrained answers.
"""

from __future__ import annotations

from pathlib import Path

from workbench.llm.llamacpp import machine_threads, shipped_model_path

DEFAULT_NAME = "smollm2-135m"


def serve_model(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str | Path | None = None,
    name: str = DEFAULT_NAME,
    n_ctx: int = 2048,
    n_threads: int | None = None,
) -> None:
    """Serve a GGUF at http://host:port/v1 under model name `name` (blocks until stopped)."""
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
    uvicorn.run(app, host=host, port=port, log_level="warning")
