"""`workbench dashboard`: the `WorkbenchApp` served by a Bokeh server behind the access gate.

`serve` binds 127.0.0.1 unless told otherwise and puts every request through the gate of
`access` (a token, Host and Origin checks), under an optional URL prefix and on a Unix socket
for the JupyterLab tile's proxy (`proxy`); beside the page it serves the bundles' tables as
files (`downloads`) and Panel's stylesheets from its own static route (`offline`). Each
browser session gets its own app; the process holds no state that matters: runs, their
events and bundles are on disk.
"""

from __future__ import annotations

from pathlib import Path

import panel as pn

from workbench._files import results_dir as default_results_dir
from workbench.runs.limits import MAX_AGENT_ROUNDS, MAX_LIVE_LAUNCHES
from workbench.ui.app import TITLE, WorkbenchApp
from workbench.ui.download_links import DOWNLOADS
from workbench.ui.server.access import Access, auth_provider, guard, new_token
from workbench.ui.server.downloads import download_route
from workbench.ui.server.offline import cdn_static_dirs
from workbench.ui.workspace import dashboard_folders


def canvas_plots() -> None:
    """Draw the dashboard's plots on a 2D canvas, not WebGL (HoloViews' default). Its plots
    hold a few hundred glyphs (histograms, heat maps, tables of rounds), where WebGL's read-back
    of every frame into the page costs more than it saves: about 0.9 s of the Results tab's
    drawing in a browser without a GPU, as on a shared cluster node."""
    import holoviews as hv

    hv.renderer("bokeh").webgl = False


def serve(
    results_dir: str | Path | None = None,
    *,
    port: int = 5006,
    address: str = "127.0.0.1",
    ray_address: str | None = None,
    prefix: str = "",
    access: Access | None = None,
    unix_socket: str | None = None,
    workspace: str | Path | None = None,
    max_live_runs: int = MAX_LIVE_LAUNCHES,
    max_agent_rounds: int = MAX_AGENT_ROUNDS,
    fresh: bool = False,
    show: bool = False,
) -> None:
    """Serve the app until interrupted; prints its URL first (with the token in token mode).

    Each browser session gets its own `WorkbenchApp` over the same results folder, inside
    `workspace` (default: the results folder), launching under the owner's limits, starting
    from the edits the page kept there (`ui.page_state`; `fresh`: from the defaults); with
    `ray_address` this process joins that Ray cluster first (a ConfigError when it does not
    answer), for the monitor and for the Ray runs launched here. Every request passes
    `access`'s gate (token, Host, Origin; see `ui.server.access`); Bokeh sessions are signed
    with a per-process secret. With `unix_socket` it listens there (mode 0600) and on no TCP
    port: the JupyterLab tile's proxy.
    """
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    access = access or Access.for_server("token", token=new_token(), address=address, port=port)
    # refused here, before serving
    folder, root = dashboard_folders(default_results_dir(results_dir), workspace)
    results, work = str(folder), str(root)
    limits = {"max_live_runs": max_live_runs, "max_agent_rounds": max_agent_rounds, "fresh": fresh}

    canvas_plots()

    def page() -> pn.viewable.Viewable:
        app = WorkbenchApp(results_dir=results, workspace=work, ray_address=ray_address, **limits)
        app.explorer.download_url = DOWNLOADS  # the route below, relative to the page
        return app.__panel__()

    if ray_address:  # joined here, on the main thread: Ray's driver set-up wants it there
        from workbench.runs.cluster import connect

        print(connect(ray_address), flush=True)
    listening = {"unix_socket": unix_socket} if unix_socket else {}
    server = pn.serve(
        page,
        port=port,
        address=address,
        prefix=prefix,
        websocket_origin=sorted(f"{h}:{port}" for h in access.hosts if ":" not in h),
        show=False,
        title=TITLE,
        liveness=True,
        static_dirs=cdn_static_dirs(),
        threaded=False,
        start=False,
        verbose=False,
        cookie_secret=access.cookie_secret,
        secret_key=access.session_secret,
        sign_sessions=True,
        auth_provider=auth_provider(),
        extra_patterns=[download_route(work)],  # behind the gate below, like every route
        **listening,
    )
    guard(server._tornado, access, prefix)  # Bokeh keeps its Tornado app there, unexported
    print(served_line(access, address, port, prefix, unix_socket, results), flush=True)
    if show and not unix_socket:
        import webbrowser

        webbrowser.open(page_url(access, address, port, prefix))
    server.start()
    server.io_loop.start()


def page_url(access: Access, address: str, port: int, prefix: str) -> str:
    """The page's address, with the token in token mode (Jupyter-style)."""
    host = f"[{address}]" if ":" in address else address
    token = f"?token={access.token}" if access.mode == "token" else ""
    return f"http://{host}:{port}{prefix}/{token}"


def served_line(
    access: Access, address: str, port: int, prefix: str, unix_socket: str | None, results: str
) -> str:
    """What the dashboard prints when it is up: where, and with which credential."""
    if unix_socket:
        return f"workbench dashboard: unix socket {unix_socket} (results: {results})"
    return f"workbench dashboard: {page_url(access, address, port, prefix)} (results: {results})"
