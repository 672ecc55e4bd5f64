"""The `workbench` commands that serve: `serve-model` (the embedded model behind an
OpenAI-compatible API) and `dashboard` (the Panel app). Registered on the app in `cli.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def serve_model_command(
    port: Annotated[int, typer.Option(help="port")] = 8000,
    host: Annotated[str, typer.Option(help="address to bind; loopback unless told")] = "127.0.0.1",
    path: Annotated[Path | None, typer.Option(help="GGUF file (default: shipped SmolLM2)")] = None,
    name: Annotated[str, typer.Option(help="model name clients ask for")] = "smollm2-135m",
    n_threads: Annotated[int | None, typer.Option(help="CPU threads")] = None,
) -> None:
    """Serve the embedded model as an OpenAI-compatible server at http://HOST:PORT/v1."""
    from workbench.llm.serve import serve_model

    typer.echo(f"serving {name} at http://{host}:{port}/v1", err=True)
    serve_model(host=host, port=port, path=path, name=name, n_threads=n_threads)


def dashboard_command(
    results: Annotated[
        Path, typer.Option(help="results directory: where runs go and the explorer looks")
    ] = Path("results"),
    port: Annotated[int, typer.Option(help="port")] = 5006,
    address: Annotated[
        str, typer.Option(help="address to bind; loopback unless told")
    ] = "127.0.0.1",
    ray: Annotated[
        str | None,
        typer.Option(help="a Ray cluster's address (or auto) for Ray runs and the monitor"),
    ] = None,
    prefix: Annotated[str, typer.Option(help="URL path prefix (behind a proxy)")] = "",
    allow_websocket_origin: Annotated[
        list[str] | None,
        typer.Option(help="another host[:port] the page may be opened from (repeat)"),
    ] = None,
    show: Annotated[bool, typer.Option(help="open a browser tab")] = False,
) -> None:
    """Serve the workbench (population, personas, runs, results, cluster) and print its URL."""
    from workbench.ui.offline import serve_panel_cdn_locally

    serve_panel_cdn_locally(prefix)  # before Panel is imported
    from workbench.ui.app import serve

    serve(
        results,
        port=port,
        address=address,
        ray_address=ray,
        prefix=prefix,
        websocket_origins=allow_websocket_origin or (),
        show=show,
    )
