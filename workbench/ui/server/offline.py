"""Panel's stylesheets from the dashboard's own server, never from cdn.holoviz.org.

Panel 1.9 rewrites its CDN stylesheet URLs to the server's static files when a page is first
drawn, but parts drawn later (a tab opened, a table or message refreshed by a callback) keep
the CDN URL (holoviz/panel#7073, open). Offline, and on clusters without internet, their
styles fail to load and the browser logs an error each time. Panel builds those URLs from
`PANEL_CDN_ROOT` at import, so pointing it at a route of our own server (`CDN_ROUTE`, which
serves Panel's `dist` folder) makes every URL local. It must run before Panel is imported.
"""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from pathlib import Path

CDN_ROUTE = "panel-cdn"
"""The server's path that stands in for the CDN: `<prefix>/panel-cdn/<version>/dist/...`."""


def panel_dist() -> Path:
    """Panel's own `dist` folder (its bundled JavaScript and stylesheets), found without
    importing Panel."""
    spec = find_spec("panel")
    if spec is None or spec.origin is None:
        raise RuntimeError("panel is not installed")
    return Path(spec.origin).parent / "dist"


def serve_panel_cdn_locally(prefix: str = "") -> str:
    """Make Panel's CDN root this server's `CDN_ROUTE` under `prefix`; returns the root.
    Refuses (RuntimeError) when Panel is already imported: its URLs are fixed by then."""
    if "panel" in sys.modules:
        raise RuntimeError("serve_panel_cdn_locally must run before Panel is imported")
    root = "/" + "/".join(p for p in (prefix.strip("/"), CDN_ROUTE) if p) + "/"
    os.environ["PANEL_CDN_ROOT"] = root
    return root


def cdn_static_dirs() -> dict[str, str]:
    """The `static_dirs` route for `pn.serve` that answers Panel's CDN URLs from `dist`."""
    from panel.io.resources import JS_VERSION

    return {f"{CDN_ROUTE}/{JS_VERSION}/dist": str(panel_dist())}
