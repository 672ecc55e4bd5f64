"""The `workbench` commands that serve: `serve-model` (the embedded model behind an
OpenAI-compatible API) and `dashboard` (the Panel app). Registered on the app in `cli.py`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from workbench._files import RESULTS_DEFAULT, results_dir
from workbench._net import DASHBOARD_TOKEN_ENV, SERVE_API_KEY_ENV
from workbench.runs.limits import MAX_AGENT_ROUNDS, MAX_LIVE_LAUNCHES

KEY_GRANTS_ENV = "WORKBENCH_ALLOW_KEY_ENV"
"""The dashboard's --allow-key-env from the environment (space-separated grants), for the
JupyterLab tile, whose command line is fixed."""


def serve_model_command(
    port: Annotated[int, typer.Option(help="port")] = 8000,
    host: Annotated[str, typer.Option(help="address to bind; loopback unless told")] = "127.0.0.1",
    path: Annotated[Path | None, typer.Option(help="GGUF file (default: shipped SmolLM2)")] = None,
    name: Annotated[str, typer.Option(help="model name clients ask for")] = "smollm2-135m",
    n_threads: Annotated[int | None, typer.Option(help="CPU threads")] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar=SERVE_API_KEY_ENV,
            show_envvar=True,
            help="the key clients must send (Authorization: Bearer); required beyond loopback. "
            "Prefer the environment variable: a command line is visible to other users",
        ),
    ] = None,
) -> None:
    """Serve the embedded model as an OpenAI-compatible server at http://HOST:PORT/v1."""
    from workbench._net import is_loopback
    from workbench.errors import ConfigError
    from workbench.llm.embedded.serve import serve_model

    if not api_key and not is_loopback(host):
        raise ConfigError(
            f"--host {host}: beyond loopback the server needs an API key; set ${SERVE_API_KEY_ENV} "
            "(or --api-key), and give it to clients through model.api_key_env"
        )
    keyed = " (API key required)" if api_key else ""
    typer.echo(f"serving {name} at http://{host}:{port}/v1{keyed}", err=True)
    serve_model(host=host, port=port, path=path, name=name, n_threads=n_threads, api_key=api_key)


TLS_ADVICE = (
    "the token travels in clear over plain HTTP: keep the dashboard on 127.0.0.1 and reach it "
    "with `ssh -L 5006:127.0.0.1:5006 HOST`, or put it behind a TLS reverse proxy "
    "(nginx, Caddy) that forwards to it"
)
"""What a dashboard bound beyond loopback prints: how to add TLS."""


def dashboard_command(
    results: Annotated[
        Path | None,
        typer.Option(
            help=f"results directory: where runs go and the explorer looks (default: "
            f"{RESULTS_DEFAULT})"
        ),
    ] = None,
    port: Annotated[int, typer.Option(help="port")] = 5006,
    address: Annotated[
        str, typer.Option(help="address to bind; loopback unless told")
    ] = "127.0.0.1",
    ray: Annotated[
        str | None,
        typer.Option(help="a Ray cluster's address (or auto) for Ray runs and the monitor"),
    ] = None,
    prefix: Annotated[str, typer.Option(help="URL path prefix (behind a proxy)")] = "",
    token: Annotated[
        str | None,
        typer.Option(
            envvar=DASHBOARD_TOKEN_ENV,
            show_envvar=True,
            help="the token the page asks for (default: a random one per process); prefer the "
            "environment variable, a command line is visible to other users",
        ),
    ] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="no token (loopback only; any local user can use it)")
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="another host name the page may be opened under (repeat)"),
    ] = None,
    unix_socket: Annotated[
        Path | None,
        typer.Option(
            help="listen on this Unix socket (mode 0600) instead of a TCP port, with no token: "
            "whoever may open the socket (its owner, a proxy such as Jupyter's) is trusted"
        ),
    ] = None,
    allow_key_env: Annotated[
        list[str] | None,
        typer.Option(
            envvar=KEY_GRANTS_ENV,
            show_envvar=True,
            help="VAR=HOST[,HOST...]: an environment variable runs launched here may send as "
            "their API key, and the hosts it may go to (repeat; none by default)",
        ),
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            help="the one folder the page may read and write (YAML load and save, results "
            "folders, replay bundles); default: the results folder"
        ),
    ] = None,
    max_live_runs: Annotated[
        int, typer.Option(min=1, help="runs launched from the page that may run at once")
    ] = MAX_LIVE_LAUNCHES,
    max_agent_rounds: Annotated[
        int, typer.Option(min=1, help="the most agents x rounds one launched run may play")
    ] = MAX_AGENT_ROUNDS,
    fresh: Annotated[
        bool,
        typer.Option(
            help="start each page from the defaults, not from the edits the page kept in the "
            "results folder (.workbench-page.json); new edits are still kept"
        ),
    ] = False,
    show: Annotated[bool, typer.Option(help="open a browser tab")] = False,
) -> None:
    """Serve the workbench (population, personas, runs, results, cluster) and print its URL,
    with the token it asks for."""
    from workbench.ui.server.access import drop_jupyter_tokens

    drop_jupyter_tokens()  # before anything else: nothing this process starts may inherit them
    os.environ.pop(DASHBOARD_TOKEN_ENV, None)  # read by typer already; no run inherits it
    from workbench._net import is_loopback
    from workbench.llm.key_policy import KeyPolicy
    from workbench.ui.server.access import dashboard_access

    KeyPolicy.parse(allow_key_env or ()).install()  # this process and every run it launches

    access = dashboard_access(
        address=address,
        port=port,
        token=token,
        no_auth=no_auth,
        allowed_hosts=allow_host or (),
        unix_socket=unix_socket is not None,
    )
    if not is_loopback(address) and unix_socket is None:
        typer.echo(f"workbench dashboard: listening on {address}: {TLS_ADVICE}", err=True)
    if access.mode == "none":
        typer.echo(
            "workbench dashboard: --no-auth: every user of this machine can drive the dashboard",
            err=True,
        )
    from workbench.ui.server.offline import serve_panel_cdn_locally

    serve_panel_cdn_locally(prefix)  # before Panel is imported
    from workbench.ui.server.dashboard import serve

    serve(
        results_dir(results),
        port=port,
        address=address,
        ray_address=ray,
        prefix=prefix,
        access=access,
        unix_socket=str(unix_socket) if unix_socket else None,
        workspace=workspace,
        max_live_runs=max_live_runs,
        max_agent_rounds=max_agent_rounds,
        fresh=fresh,
        show=show,
    )
