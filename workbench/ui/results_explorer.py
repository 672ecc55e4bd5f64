"""ResultsExplorer: the bundles of a results folder, their plots, provenance, tables and checks.

A picker over `results.list_bundles` (status, model, N, date), the interactive `viz.plots` of
the chosen bundle (histogram, a distribution by any persona column, trajectories), several
bundles compared (`viz.plots.compare` and `experiment.compare.config_differences`), what the
manifest records (config, seeds, versions, model identity and hash), its tables paged in the
page and downloadable as CSV or Parquet, and `results.verify_bundle` on a click.

Every number drawn comes from viz; this module only chooses what to show. A folder without
bundles, a damaged bundle or one still running shows a message in place of its view, never a
traceback: the views catch the workbench's own errors (`WorkbenchError`), anything else is a
bug and keeps its traceback. Tables reach the browser a page at a time
(`Tabulator(pagination="remote")`); verify runs in a thread so the page stays live.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import holoviews as hv
import pandas as pd
import panel as pn
import param

from workbench.errors import BundleError, WorkbenchError
from workbench.experiment.compare import config_differences
from workbench.results import Bundle, VerifyReport, verify_bundle
from workbench.ui.results_data import (
    BUNDLE_COLUMNS,
    FORMATS,
    TABLES,
    bundle_rows,
    bundle_table,
    group_columns,
    provenance,
    table_bytes,
)
from workbench.ui.safe_text import TextTable, html_text, md, md_lines
from workbench.ui.workspace import inside, workspace_param
from workbench.viz import plots

__all__ = ["PAGE_SIZES", "ResultsExplorer"]

PAGE_SIZES = (10, 25, 50, 100)
"""The choices of rows per page."""


def _alert(text: str, kind: str = "warning") -> pn.pane.Alert:
    """A message as an alert; its text (run ids, errors, paths from the folder) escaped."""
    return pn.pane.Alert(md(text), alert_type=kind, margin=(5, 10))


def _row(bundles: pd.DataFrame, run_id: str | None) -> list[dict[str, Any]]:
    """A bundle's row of a listing, as plain records (none when it is not listed)."""
    return bundles[bundles["run_id"] == run_id].to_dict("records")


# --------------------------------------------------------------------------- the component


class ResultsExplorer(pn.viewable.Viewer):
    """Browse the result bundles of a folder: pick one, plot it, compare it, check it.

    Set `results_dir` (or call `refresh()` after new runs), choose `run_id`, then `by`, `kind`
    and `round` for the distribution; `compared` for bundles side by side; `table` for the
    table shown and downloaded; `await verify()` checks the chosen bundle.
    """

    results_dir = param.String(
        default="results",
        doc="The folder whose sub-folders are the bundles listed (a run's --out folder); "
        "inside `workspace` when that is set.",
    )
    workspace = workspace_param()
    problem = param.String(
        default="", doc="Why results_dir is not listed (outside the workspace); '' when it is."
    )
    bundles = param.DataFrame(
        default=pd.DataFrame(columns=list(BUNDLE_COLUMNS)),
        doc="The bundles in results_dir (run_id, status, model, n_agents, rounds_done, "
        "created_at, path), oldest first; refresh() reads the folder again.",
    )
    damaged = param.Dict(
        default={},
        doc="Sub-folders of results_dir with a manifest.json that cannot be read: name -> why.",
    )
    run_id = param.Selector(
        default=None, objects=[], allow_None=True, doc="The run id of the bundle shown."
    )
    by = param.Selector(
        default=None,
        objects=[],
        allow_None=True,
        doc="The persona column the distribution groups guesses by (the chosen bundle's: "
        "education, profession, gender, model, ...).",
    )
    kind = param.Selector(
        default="bars",
        objects=list(plots.KINDS),
        doc="How the distribution is drawn: bars (shares per guess), heatmap, quantiles "
        "(boxes from exact quantiles) or means (with 95% intervals).",
    )
    round = param.Selector(
        default=None,
        objects=[],
        allow_None=True,
        doc="The round of the histogram and the distribution; kept when another bundle is "
        "chosen that played it, else that bundle's last round.",
    )
    trajectories_by_group = param.Boolean(
        default=False,
        doc="Draw the round trajectories per category of `by` instead of the whole population.",
    )
    compared = param.ListSelector(
        default=[],
        objects=[],
        doc="Run ids of the bundles compared side by side (two or more).",
    )
    table = param.Selector(
        default="rounds",
        objects=list(TABLES),
        doc="The bundle table shown (a page at a time) and offered as CSV and Parquet; read "
        "when chosen (rounds by default: a million responses are read only when asked for).",
    )
    page_size = param.Selector(
        default=25, objects=list(PAGE_SIZES), doc="Rows per page of the table shown."
    )
    report = param.ClassSelector(
        default=None,
        class_=VerifyReport,
        allow_None=True,
        doc="What verify found for the chosen bundle (None until verify runs).",
    )
    verifying = param.Boolean(default=False, doc="Whether verify is running.")
    reads = param.Integer(
        default=0,
        doc="How many times refresh() has read the folder: the chosen bundle's views redraw on "
        "it (a live run moved on) even when the same bundle stays chosen.",
    )

    def __init__(self, **params: Any) -> None:
        self._opened: dict[str, Bundle] = {}
        self._tables: dict[tuple[str, str], pd.DataFrame] = {}
        super().__init__(**params)
        self.refresh()

    # ------------------------------------------------------------------ state

    @param.depends("results_dir", watch=True)
    def refresh(self) -> None:
        """Read results_dir again: the bundle list, the damaged folders, the choices; keeps the
        chosen bundle when it is still there (else the newest) and reopens it (a live run)."""
        self._opened.clear()
        self._tables.clear()
        try:
            folder, problem = inside(self.workspace, self.results_dir, "results folder"), ""
        except WorkbenchError as exc:  # listed as empty, with the reason
            folder, problem = None, str(exc)
        if folder is None:
            rows, damaged = pd.DataFrame(columns=list(BUNDLE_COLUMNS)), {}
        else:
            rows, damaged = bundle_rows(folder)
        ids = list(rows["run_id"])
        names = {
            f"{r.run_id} ({r.status}, {r.model}, N={r.n_agents})": r.run_id
            for r in rows.itertuples()
        }
        keep = self.run_id if self.run_id in ids else (ids[-1] if ids else None)
        moved = _row(self.bundles, keep) != _row(rows, keep)  # e.g. a live run's rounds
        # the table first: a drawn picker follows new choices at once, reading the table
        self.param.update(bundles=rows, damaged=damaged, problem=problem)
        self.param.run_id.objects = names
        # the compare picker (Bokeh's MultiChoice) shows its labels as HTML: escaped
        self.param.compared.objects = {html_text(i): i for i in ids}
        self.compared = [i for i in self.compared if i in ids]
        # `reads` (never `param.trigger("run_id")`) redraws the same bundle's views when its
        # listing moved: a trigger reached the empty Round / Group-by selects, which set their
        # value again inside it, each time triggering themselves (a RecursionError in Panel's
        # Select); and views drawn again for nothing replaced plots the browser was still
        # laying out when the tab opened (a TypeError in Bokeh's layout)
        same = keep == self.run_id
        self.param.update(run_id=keep, reads=self.reads + 1 if same and moved else self.reads)

    @param.depends("run_id", "reads", watch=True)
    def _chosen_changed(self) -> None:
        """A new bundle: its persona columns and rounds become the choices (`by` and `round`
        stay when it has them); the old report goes."""
        self._tables.clear()
        columns: list[str] = []
        rounds: list[int] = []
        try:
            bundle = self.bundle()
            columns = group_columns(bundle)
            rounds = [entry["round"] for entry in bundle.rounds_done]
        except WorkbenchError:
            pass
        by = (
            self.by
            if self.by in columns
            else next((c for c in ("education", *columns) if c in columns), None)
        )
        self.param.by.objects = columns
        self.param.round.objects = rounds
        number = self.round if self.round in rounds else (rounds[-1] if rounds else None)
        self.param.update(by=by, round=number, report=None)

    def bundle(self) -> Bundle:
        """The chosen bundle, opened once per refresh; BundleError when none is chosen (or the
        listing no longer has it: a refresh sets the listing before the choice)."""
        paths = self.bundles.loc[self.bundles["run_id"] == self.run_id, "path"]
        if self.run_id is None or paths.empty:
            raise BundleError(self._nothing_message())
        if self.run_id not in self._opened:
            self._opened[self.run_id] = Bundle.open(paths.iloc[0])
        return self._opened[self.run_id]

    def _nothing_message(self) -> str:
        if self.problem:
            return self.problem
        folder = Path(self.results_dir)
        if not folder.is_dir():
            return f"{folder}: no such folder; give results_dir a folder of bundles"
        return (
            f"{folder}: no bundles here yet; run a game into it (workbench run CONFIG --out "
            f"{folder}) and refresh"
        )

    # ------------------------------------------------------------------ what is shown

    def _played(self) -> Bundle:
        """The chosen bundle when it has a finished round; BundleError saying so when not."""
        bundle = self.bundle()
        if not bundle.rounds_count:
            raise BundleError(
                f"{bundle.run_id}: no finished round yet ({bundle.status}); refresh after one"
            )
        return bundle

    def histogram_plot(self) -> hv.Element:
        """viz.plots.histogram of the chosen bundle's round."""
        return plots.histogram(self._played(), self.round)

    def distribution_plot(self) -> Any:
        """viz.plots.distribution of the chosen bundle by `by`, drawn as `kind`."""
        bundle = self._played()
        if self.by is None:
            raise BundleError(f"{bundle.run_id}: its personas have no column to group by")
        return plots.distribution(bundle, self.by, self.round, self.kind)

    def trajectories_plot(self) -> hv.Element:
        """viz.plots.trajectories of the chosen bundle (per category of `by` when asked)."""
        by = self.by if self.trajectories_by_group else None
        return plots.trajectories(self._played(), by)

    def _compared_bundles(self) -> dict[str, Bundle]:
        if len(self.compared) < 2:
            raise BundleError("choose two or more bundles to compare")
        paths = self.bundles.set_index("run_id")["path"]
        return {run_id: Bundle.open(paths[run_id]) for run_id in self.compared}

    def compare_plot(self) -> hv.Element:
        """viz.plots.compare of the compared bundles, labelled by run id."""
        return plots.compare(self._compared_bundles())

    def differences(self) -> pd.DataFrame:
        """The config keys whose values differ between the compared bundles (one column each)."""
        return config_differences(self._compared_bundles()).reset_index()

    def provenance(self) -> pd.DataFrame:
        """What the chosen bundle's manifest records about how it was made (see `provenance`)."""
        return provenance(self.bundle())

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

    async def verify(self) -> VerifyReport | None:
        """Verify the chosen bundle in a worker thread (hashes, counts, round statistics) and
        keep the report in `report`; None when no bundle is chosen."""
        if self.run_id is None:
            return None
        path, run_id = self.bundle().path, self.run_id
        self.param.update(verifying=True, report=None)
        try:
            report = await asyncio.to_thread(verify_bundle, path)
        finally:
            self.verifying = False
        if self.run_id == run_id:
            self.report = report
        return report

    # ------------------------------------------------------------------ views (panes)

    def _guarded(self, draw: Callable[[], Any], kind: str = "warning") -> Any:
        """`draw()`'s pane, or its WorkbenchError as a message in its place."""
        try:
            return draw()
        except WorkbenchError as exc:
            return _alert(str(exc), kind)

    @param.depends("bundles", "damaged", "run_id", "reads", "problem")
    def status_view(self) -> pn.Column:
        """The folder's messages (refused, no bundles, damaged ones) and the chosen bundle's
        status."""
        parts: list[Any] = []
        if self.bundles.empty:
            parts.append(_alert(self._nothing_message(), "danger" if self.problem else "info"))
        for name, why in self.damaged.items():
            parts.append(_alert(f"{name}: not readable as a bundle: {why}", "danger"))
        if self.run_id is not None:
            parts.append(self._guarded(self._chosen_summary))
        return pn.Column(*parts, sizing_mode="stretch_width")

    def _chosen_summary(self) -> Any:
        bundle = self.bundle()
        status = bundle.status  # the one status: a run whose writer is gone reads dead
        if status == "complete":
            summary = f"**{md(bundle.run_id)}**: complete, {bundle.rounds_count} rounds"
            return pn.pane.Markdown(summary)
        why = f": {bundle.error}" if bundle.error else ""
        if status == "dead":
            why = ": its writer stopped before it finished; resume it with "
            why += f"workbench run --resume {bundle.path}"
        return _alert(f"{bundle.run_id} is {status}{why}", "warning")

    def _plot_pane(self, draw: Callable[[], Any]) -> Any:
        return self._guarded(lambda: pn.pane.HoloViews(draw(), sizing_mode="stretch_width"))

    @param.depends("run_id", "reads", "round")
    def histogram_view(self) -> Any:
        """The histogram pane, or why there is none."""
        return self._plot_pane(self.histogram_plot)

    @param.depends("run_id", "reads", "round", "by", "kind")
    def distribution_view(self) -> Any:
        """The distribution pane, or why there is none."""
        return self._plot_pane(self.distribution_plot)

    @param.depends("run_id", "reads", "by", "trajectories_by_group")
    def trajectories_view(self) -> Any:
        """The trajectories pane, or why there is none."""
        return self._plot_pane(self.trajectories_plot)

    @param.depends("compared", "bundles")
    def compare_view(self) -> Any:
        """The compared bundles' plot and the config keys that differ, or what to choose."""

        def draw() -> pn.Column:
            differences = self.differences()
            table: Any = (
                pn.pane.DataFrame(differences, index=False, sizing_mode="stretch_width")
                if len(differences)
                else _alert("The configs agree on every key.", "info")
            )
            plot = pn.pane.HoloViews(self.compare_plot(), sizing_mode="stretch_width")
            heading = pn.pane.Markdown("**Config keys that differ**")
            return pn.Column(plot, heading, table, sizing_mode="stretch_width")

        return self._guarded(draw, "info")

    @param.depends("run_id", "reads")
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

    def _table_or_empty(self, run_id: str | None, name: str, _reads: int = 0) -> pd.DataFrame:
        try:
            return self.table_frame(name)
        except WorkbenchError:
            return pd.DataFrame()

    def _table_unreadable(self, run_id: str | None, name: str, _reads: int = 0) -> bool:
        return self._table_or_empty(run_id, name).empty

    @param.depends("run_id", "reads", "table")
    def table_message(self) -> Any:
        """Why the chosen table cannot be read (nothing when it can)."""

        def read() -> None:
            self.table_frame()

        return self._guarded(read)

    @param.depends("report", "verifying")
    def report_view(self) -> Any:
        """What verify found: ok in green, the problems in red."""
        if self.verifying:
            return _alert("verifying...", "info")
        if self.report is None:
            return None
        kind = "success" if self.report.ok else "danger"
        return pn.pane.Alert(md_lines(self.report), alert_type=kind, margin=(5, 10))

    def __panel__(self) -> pn.viewable.Viewable:
        refresh = pn.widgets.Button(label="Refresh", variant="outline")
        refresh.on_click(lambda _: self.refresh())
        verify = pn.widgets.Button(label="Verify", color="primary", disabled=self.param.verifying)
        verify.on_click(self._on_verify)
        picker = pn.Column(
            pn.Row(
                pn.widgets.TextInput.from_param(self.param.results_dir, label="Results folder"),
                refresh,
            ),
            pn.widgets.Select.from_param(self.param.run_id, label="Bundle"),
            TextTable(
                self.param.bundles,
                pagination="remote",
                page_size=10,
                disabled=True,
                show_index=False,
                hidden_columns=["path"],
                sizing_mode="stretch_width",
            ),
            pn.panel(self.status_view),
            pn.Row(verify),
            pn.panel(self.report_view),
            sizing_mode="stretch_width",
        )
        plots_tab = pn.Column(
            pn.widgets.Select.from_param(self.param.round, label="Round"),
            pn.panel(self.histogram_view, loading_indicator=True),
            pn.Row(
                pn.widgets.Select.from_param(self.param.by, label="Group by"),
                pn.widgets.RadioButtonGroup.from_param(self.param.kind),
            ),
            pn.panel(self.distribution_view, loading_indicator=True),
            pn.widgets.Checkbox.from_param(
                self.param.trajectories_by_group, label="Trajectories per group"
            ),
            pn.panel(self.trajectories_view, loading_indicator=True),
            sizing_mode="stretch_width",
        )
        compare_tab = pn.Column(
            pn.widgets.MultiChoice.from_param(self.param.compared, label="Bundles to compare"),
            pn.panel(self.compare_view, loading_indicator=True),
            sizing_mode="stretch_width",
        )
        downloads = []
        for fmt in FORMATS:
            download = pn.widgets.FileDownload(
                filename=self.file_name(fmt),
                label=fmt.upper(),
                variant="outline",
                disabled=pn.bind(
                    self._table_unreadable, self.param.run_id, self.param.table, self.param.reads
                ),
            )
            download.callback = partial(self._send, download, fmt)
            downloads.append(download)
        tables_tab = pn.Column(
            pn.Row(
                pn.widgets.RadioButtonGroup.from_param(self.param.table),
                pn.widgets.Select.from_param(self.param.page_size, label="Rows per page"),
                *downloads,
            ),
            pn.panel(self.table_message),
            TextTable(
                pn.bind(
                    self._table_or_empty, self.param.run_id, self.param.table, self.param.reads
                ),
                pagination="remote",
                page_size=self.param.page_size,
                disabled=True,
                show_index=False,
                sizing_mode="stretch_width",
            ),
            sizing_mode="stretch_width",
        )
        tabs = pn.Tabs(
            ("Plots", plots_tab),
            ("Compare", compare_tab),
            ("Provenance", pn.panel(self.provenance_view)),
            ("Tables", tables_tab),
            dynamic=True,
            sizing_mode="stretch_width",
        )
        return pn.Column(picker, tabs, sizing_mode="stretch_width")

    def _send(self, download: pn.widgets.FileDownload, fmt: str) -> io.BytesIO:
        """A download's callback: names the file for the bundle and table chosen now."""
        download.filename = self.file_name(fmt)
        return self.download(fmt)

    async def _on_verify(self, _event: Any) -> None:
        await self.verify()
