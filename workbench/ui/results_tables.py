"""The Results tab's Tables view: a bundle's tables a page at a time, and their downloads.

The responses, the rounds, the personas, and the tidy table (`results.export`: one row per
agent and finished round with the persona columns, for R and Stata), each shown a page at a
time with its statistics to 2 decimals (the frame keeps the exact values) and offered as CSV
and Parquet. Served by the dashboard, the downloads are links to its download route
(`ui/server/downloads.py`, which writes the tidy table a round at a time); inline in a notebook they
are `FileDownload` buttons whose bytes go through the kernel's comm.

A mixin of `ResultsExplorer`: it reads the explorer's params and its `bundle()`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any

import pandas as pd
import panel as pn

from workbench.ui.lazy_view import LazyView
from workbench.ui.results_data import FORMATS, bundle_table, table_bytes
from workbench.ui.results_exact import numbers_formatted
from workbench.ui.safe_text import TextTable

__all__ = ["TIDY_NOTE", "TableViews"]

TIDY_NOTE = (
    "**tidy**: one row per agent and round with the persona columns and the answer, for R, "
    "Stata or pandas (also `workbench bundles export BUNDLE`)."
)
"""What the tidy table is, said under the table picker."""


class TableViews:
    """The Tables view and the downloads (see the module)."""

    run_id: str | None
    table: str
    download_url: str | None
    param: Any
    _tables: dict[tuple[str, str], pd.DataFrame]
    bundle: Callable[[], Any]
    _key: Callable[..., Callable[[], Hashable]]
    _table_or_empty: Callable[[], pd.DataFrame]
    table_message: Callable[[], Any]
    download_links: Callable[[], Any]

    def table_frame(self, name: str | None = None) -> pd.DataFrame:
        """The chosen bundle's table `name` (default `table`), read once per bundle."""
        name = name or self.table
        key = (str(self.run_id), name)
        if key not in self._tables:
            self._tables[key] = bundle_table(self.bundle(), name)
        return self._tables[key]

    def download(self, fmt: str, name: str | None = None) -> io.BytesIO:
        """The chosen bundle's table as a CSV or Parquet file (a FileDownload callback)."""
        return io.BytesIO(table_bytes(self.table_frame(name), fmt))

    def file_name(self, fmt: str, name: str | None = None) -> str:
        """The download's file name: <run id>-<table>.<fmt>."""
        return f"{self.run_id or 'no-bundle'}-{name or self.table}.{fmt}"

    def _tables_tab(self) -> tuple[pn.Column, LazyView]:
        """The table chosen, a page at a time, its downloads and why it cannot be read; its
        view sets the table's value in place (a Tabulator replaced while drawn breaks)."""
        table = TextTable(
            pd.DataFrame(),
            pagination="remote",
            page_size=self.param.page_size,
            disabled=True,
            show_index=False,
            sizing_mode="stretch_width",
        )
        message = pn.Column(sizing_mode="stretch_width")
        downloads = pn.Row()
        buttons = [] if self.download_url else [self._download_button(f) for f in FORMATS]

        def apply() -> None:
            frame = self._table_or_empty()
            message.objects = [self.table_message()]
            readable = not frame.empty
            if self.download_url:
                downloads.objects = [self.download_links()] if readable else []
            else:
                for fmt, button in zip(FORMATS, buttons, strict=True):
                    button.param.update(disabled=not readable, filename=self.file_name(fmt))
                downloads.objects = buttons
            table.formatters = numbers_formatted(frame)
            table.value = frame

        self._table = table
        tab = pn.Column(
            pn.Row(
                pn.widgets.RadioButtonGroup.from_param(self.param.table),
                pn.widgets.Select.from_param(self.param.page_size, label="Rows per page"),
                downloads,
            ),
            message,
            pn.pane.Markdown(TIDY_NOTE, css_classes=["wb-tidy-note"], margin=(0, 10)),
            table,
            sizing_mode="stretch_width",
        )
        return tab, LazyView(self._key("table"), apply)

    def _download_button(self, fmt: str) -> pn.widgets.FileDownload:
        """Inline (no dashboard route): a FileDownload whose bytes go through the comm."""
        download = pn.widgets.FileDownload(
            filename=self.file_name(fmt), label=fmt.upper(), variant="outline", disabled=True
        )
        download.callback = partial(self._send, download, fmt)
        return download

    def _send(self, download: pn.widgets.FileDownload, fmt: str) -> io.BytesIO:
        """A download's callback: names the file for the bundle and table chosen now."""
        download.filename = self.file_name(fmt)
        return self.download(fmt)
