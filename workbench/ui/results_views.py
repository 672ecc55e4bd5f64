"""The panes of the ResultsExplorer's views: each draws what the explorer's state chooses, or
says why it cannot (a `WorkbenchError` as a message in its place, never a traceback).

A mixin of `ResultsExplorer` (it reads the explorer's params and data methods); the explorer
decides when each is drawn (`ui/lazy_view.py`). Every text from a folder, a manifest or an
error is escaped before it reaches a pane (`ui/safe_text.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import panel as pn

from workbench.errors import WorkbenchError
from workbench.results.run_statuses import RunStatus, resume_command
from workbench.ui.download_links import download_href
from workbench.ui.notices import Level, notice
from workbench.ui.results_data import FORMATS
from workbench.ui.safe_text import html_text, md

__all__ = ["LINK_STYLE", "ResultsViews", "alert"]

LINK_STYLE = (
    "display:inline-block;padding:6px 14px;margin-right:6px;border:1px solid #1976d2;"
    "border-radius:4px;color:#1976d2;text-decoration:none;font-size:13px"
)
"""The download links drawn as the page's outline buttons."""


def alert(text: str, kind: Level = "warning") -> pn.pane.Markdown:
    """A message as a notice; its text (run ids, errors, paths from the folder) escaped."""
    return notice(md(text), kind, margin=(5, 10))


class ResultsViews:
    """The explorer's panes (see the module's docstring)."""

    # the explorer's params and methods these panes read
    bundles: pd.DataFrame
    damaged: dict[str, str]
    run_id: str | None
    problem: str
    table: str
    workspace: str | None
    download_url: str | None
    bundle: Callable[[], Any]
    histogram_plot: Callable[[], Any]
    distribution_plot: Callable[[], Any]
    trajectories_plot: Callable[[], Any]
    compare_plot: Callable[[], Any]
    differences: Callable[[], pd.DataFrame]
    provenance: Callable[[], pd.DataFrame]
    table_frame: Callable[..., pd.DataFrame]
    file_name: Callable[..., str]
    _nothing_message: Callable[[], str]

    def _guarded(self, draw: Callable[[], Any], kind: str = "warning") -> Any:
        """`draw()`'s pane, or its WorkbenchError as a message in its place."""
        try:
            return draw()
        except WorkbenchError as exc:
            return alert(str(exc), kind)

    def status_view(self) -> pn.Column:
        """The folder's messages (refused, no bundles, damaged ones) and the chosen bundle's
        status; an empty folder's message is the only one said about it."""
        parts: list[Any] = []
        if self.bundles.empty:
            parts.append(alert(self._nothing_message(), "danger" if self.problem else "info"))
        for name, why in self.damaged.items():
            parts.append(alert(f"{name}: not readable as a bundle: {why}", "danger"))
        if self.run_id is not None:
            parts.append(self._guarded(self._chosen_summary))
        return pn.Column(*parts, sizing_mode="stretch_width")

    def _chosen_summary(self) -> Any:
        bundle = self.bundle()
        status = bundle.status  # the one status: a run whose writer is gone reads dead
        if status is RunStatus.COMPLETE:
            summary = f"**{md(bundle.run_id)}**: complete, {bundle.rounds_count} rounds"
            return pn.pane.Markdown(summary)
        why = f": {bundle.error}" if bundle.error else ""
        if status is RunStatus.DEAD:
            why = ": its writer stopped before it finished; resume it with "
            why += resume_command(bundle.path)
        return alert(f"{bundle.run_id} is {status}{why}", "warning")

    def _plot_pane(self, draw: Callable[[], Any]) -> Any:
        return self._guarded(lambda: pn.pane.HoloViews(draw(), sizing_mode="stretch_width"))

    def histogram_view(self) -> Any:
        """The histogram pane, or why there is none."""
        return self._plot_pane(self.histogram_plot)

    def distribution_view(self) -> Any:
        """The distribution pane, or why there is none."""
        return self._plot_pane(self.distribution_plot)

    def trajectories_view(self) -> Any:
        """The trajectories pane, or why there is none."""
        return self._plot_pane(self.trajectories_plot)

    def compare_view(self) -> Any:
        """The compared bundles' plot and the config keys that differ, or what to choose."""

        def draw() -> pn.Column:
            differences = self.differences()
            table: Any = (
                pn.pane.DataFrame(differences, index=False, sizing_mode="stretch_width")
                if len(differences)
                else alert("The configs agree on every key.", "info")
            )
            plot = pn.pane.HoloViews(self.compare_plot(), sizing_mode="stretch_width")
            heading = pn.pane.Markdown("**Config keys that differ**")
            return pn.Column(plot, heading, table, sizing_mode="stretch_width")

        return self._guarded(draw, "info")

    def provenance_view(self) -> Any:
        """The provenance table and the config, or why there are none."""

        def draw() -> pn.Column:
            bundle = self.bundle()
            table = pn.pane.DataFrame(self.provenance(), index=False, sizing_mode="stretch_width")
            config = pn.pane.JSON(bundle.manifest["config"], depth=2, name="config")
            return pn.Column(
                pn.pane.Markdown("**Provenance**"), table, pn.pane.Markdown("**Config**"), config
            )

        return self._guarded(draw)

    def _table_or_empty(self) -> pd.DataFrame:
        try:
            return self.table_frame()
        except WorkbenchError:
            return pd.DataFrame()

    def table_message(self) -> Any:
        """Why the chosen table cannot be read (nothing when it can)."""

        def read() -> None:
            self.table_frame()

        return self._guarded(read)

    def download_links(self) -> Any:
        """The served downloads: links to the chosen table's CSV and Parquet files."""
        bundle = self.bundle()
        links = []
        for fmt in FORMATS:
            href = download_href(str(self.download_url), self.workspace or ".", bundle.path,
                                 self.table, fmt)  # fmt: skip
            name = self.file_name(fmt)
            links.append(
                f'<a class="wb-download" href="{html_text(href)}" download="{html_text(name)}" '
                f'style="{LINK_STYLE}">{fmt.upper()}</a>'
            )
        return pn.pane.HTML(" ".join(links), margin=(12, 5))
