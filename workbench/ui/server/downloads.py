"""A bundle's tables as files the dashboard serves: `workbench-downloads/<bundle>/<table>.<fmt>`
(the URL's shape: `ui/download_links.py`).

The Results tab's CSV and Parquet links point here, so a table reaches the browser as an
ordinary HTTP download (written by Arrow in a worker thread, sent in chunks) instead of one
base64 string through the page's websocket (55 MB of CSV for a million responses). The route
is added to the dashboard's Tornado app, so the access gate of `ui/server/access.py` (token,
Host, Origin) stands in front of it like every other route. `<bundle>` is the bundle folder's path
relative to the workspace; it is resolved with `workspace.inside` (no `..`, no symbolic link
out of it) and must be a readable bundle, and `<table>` and `<fmt>` are names from fixed lists:
anything else is a 404 that names nothing of the disk. The tidy table (one row per agent and
round) is written a round at a time to a private temporary file and sent from there.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from urllib.parse import unquote

from tornado.web import HTTPError, RequestHandler

from workbench.errors import WorkbenchError
from workbench.results import Bundle
from workbench.results.export import export_tidy
from workbench.ui.download_links import download_pattern
from workbench.ui.results_data import TIDY, bundle_table, table_bytes
from workbench.ui.workspace import inside

__all__ = ["TableDownloadHandler", "download_route"]

CHUNK = 1 << 20
"""Bytes written per chunk of a download."""

MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}
"""The Content-Type of each download format."""


def download_route(workspace: str | Path) -> tuple[str, type[RequestHandler], dict[str, str]]:
    """The Tornado route (pattern, handler, arguments) serving the bundles inside `workspace`;
    Bokeh puts the URL prefix in front of the pattern."""
    return download_pattern(), TableDownloadHandler, {"workspace": str(Path(workspace).resolve())}


class TableDownloadHandler(RequestHandler):
    """GET a bundle's table as a CSV or Parquet file (see the module's docstring)."""

    def initialize(self, workspace: str) -> None:
        self.workspace = workspace

    def bundle(self, encoded: str) -> Bundle:
        """The bundle at `encoded` (relative to the workspace); HTTPError 404 when there is
        none there, or the path leads out of the workspace."""
        relative = unquote(encoded)
        if not relative or relative.startswith("/") or "\\" in relative or "\x00" in relative:
            raise HTTPError(404)
        try:
            return Bundle.open(inside(self.workspace, relative, "download"))
        except (WorkbenchError, OSError, ValueError):
            raise HTTPError(404) from None

    async def get(self, encoded: str, table: str, fmt: str) -> None:
        bundle = self.bundle(encoded)
        if table == TIDY:
            await self._send_tidy(bundle, fmt)
            return
        try:
            data = await asyncio.to_thread(lambda: table_bytes(bundle_table(bundle, table), fmt))
        except WorkbenchError:  # a damaged table: the page says why next to the link
            raise HTTPError(404) from None
        self._download_headers(bundle, table, fmt, len(data))
        for start in range(0, len(data), CHUNK):
            self.write(data[start : start + CHUNK])
            await self.flush()

    async def _send_tidy(self, bundle: Bundle, fmt: str) -> None:
        """The tidy table, written a round at a time to a private temporary file by a worker
        thread (`results.export`), then sent from it in chunks: a million agents' rounds
        never sit in memory whole."""
        with tempfile.TemporaryDirectory(prefix="workbench-tidy-") as folder:
            path = Path(folder) / f"{TIDY}.{fmt}"
            try:
                await asyncio.to_thread(export_tidy, bundle, path, fmt)
            except WorkbenchError:
                raise HTTPError(404) from None
            self._download_headers(bundle, TIDY, fmt, path.stat().st_size)
            with path.open("rb") as file:
                while chunk := file.read(CHUNK):
                    self.write(chunk)
                    await self.flush()

    def _download_headers(self, bundle: Bundle, table: str, fmt: str, size: int) -> None:
        """A download's headers: its type, its file name, no sniffing, no caching, its size."""
        self.set_header("Content-Type", MEDIA_TYPES[fmt])
        self.set_header(
            "Content-Disposition", f'attachment; filename="{_file_name(bundle, table, fmt)}"'
        )
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Length", str(size))

    def write_error(self, status_code: int, **kwargs: object) -> None:
        """One line, never a traceback or a path."""
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"{status_code}: no such bundle table here\n")


def _file_name(bundle: Bundle, table: str, fmt: str) -> str:
    """<run id>-<table>.<fmt>, the run id kept to characters safe in a header."""
    run_id = "".join(c for c in bundle.run_id if c.isascii() and (c.isalnum() or c in "._-"))
    return f"{run_id or 'bundle'}-{table}.{fmt}"
