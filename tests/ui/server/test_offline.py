"""Panel's CDN URLs point at the dashboard's own server (holoviz/panel#7073 workaround)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from workbench.ui.server.offline import (
    CDN_ROUTE,
    cdn_static_dirs,
    panel_dist,
    serve_panel_cdn_locally,
)


def test_panel_imported_afterwards_builds_its_cdn_urls_on_our_route() -> None:
    code = (
        "from workbench.ui.server.offline import serve_panel_cdn_locally\n"
        "root = serve_panel_cdn_locally('/user/x/workbench')\n"
        "from panel.io.resources import CDN_DIST\n"
        "print(root, CDN_DIST)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    root, dist = out.stdout.split()
    assert root == f"/user/x/workbench/{CDN_ROUTE}/"
    assert dist.startswith(root) and dist.endswith("/dist/") and "cdn.holoviz.org" not in dist


def test_the_route_serves_panels_dist_folder() -> None:
    ((route, folder),) = cdn_static_dirs().items()
    assert route.startswith(f"{CDN_ROUTE}/") and route.endswith("/dist")
    assert folder == str(panel_dist()) and (panel_dist() / "css" / "loading.css").is_file()


def test_it_refuses_once_panel_is_imported() -> None:
    import panel  # noqa: F401

    with pytest.raises(RuntimeError, match="before Panel is imported"):
        serve_panel_cdn_locally()
