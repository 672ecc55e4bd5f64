"""Where the dashboard serves a bundle's tables: `workbench-downloads/<bundle>/<table>.<fmt>`.

The one shape of a download's URL, written by the Results tab's links (`download_href`) and
read by the server's route (`download_pattern`, `ui/server/downloads.py`), kept here so the
components need nothing of the server (Tornado) to draw a link to it.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from workbench.ui.results_data import FORMATS, TABLES

__all__ = ["DOWNLOADS", "download_href", "download_pattern"]

DOWNLOADS = "workbench-downloads"
"""The route's first path segment (under the dashboard's URL prefix)."""


def download_href(
    base: str, workspace: str | Path, bundle: str | Path, table: str, fmt: str
) -> str:
    """The link of `bundle`'s `table` as `fmt`, relative to the page (`base` is DOWNLOADS, or
    a path ending in it); the bundle's path is percent-encoded segment by segment.
    ValueError when the bundle is not inside the workspace."""
    relative = Path(bundle).resolve().relative_to(Path(workspace).resolve())
    return f"{base}/{quote(relative.as_posix(), safe='/')}/{table}.{fmt}"


def download_pattern() -> str:
    """The route's pattern, the inverse of `download_href`: groups for the percent-encoded
    bundle path, the table and the format (names from fixed lists)."""
    return rf"/{DOWNLOADS}/(.+)/({'|'.join(TABLES)})\.({'|'.join(FORMATS)})"
