"""ResultsExplorer: the bundles of a results folder, their plots, provenance, tables and checks.

A picker over `results.list_bundles` (status, model, N, date, the parent of a fork), the
interactive `viz.plots` of the chosen bundle (histogram, a distribution by any persona column,
trajectories), its exact group view where the run kept exact distributions (`ui/results_exact`:
each group's exact mean and sampling band, each gap's verdict in words), several bundles
compared (`viz.plots.compare` and `experiment.compare.config_differences`), what the manifest
records (config, seeds, versions, model identity and hash), its tables paged in the page and
downloadable as CSV or Parquet, the tidy table for R and Stata among them
(`ui/results_tables`), and `results.verify_bundle` on a click.

Only what is on screen is computed: each view is a `LazyView`, drawn when its tab is shown
(`shown` is the explorer's own visibility, set by the dashboard as its Results tab opens and
closes) and drawn again only when what it shows changed, so a hidden tab costs nothing until it
is opened and then once per bundle. A refresh that finds nothing new changes nothing in the
page. Served by `workbench dashboard`, the downloads are links to files the dashboard serves
(`ui/server/downloads.py`, `download_url`); inline in a notebook, where no such route exists, they
stay `FileDownload` buttons whose bytes go through the kernel's comm.

Every number drawn comes from viz; this module only chooses what to show. A folder without
bundles, a damaged bundle or one still running shows a message in place of its view, never a
traceback: the views catch the workbench's own errors (`WorkbenchError`), anything else is a
bug and keeps its traceback; a folder without bundles says so once, with what fills it. Tables
reach the browser a page at a time (`Tabulator(pagination="remote")`); verify runs in a thread
so the page stays live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import holoviews as hv
import pandas as pd
import panel as pn
import param

from workbench.errors import BundleError, WorkbenchError
from workbench.experiment.compare import config_differences
from workbench.results import Bundle, VerifyReport, verify_bundle
from workbench.results.bundle import BUNDLE_COLUMNS
from workbench.ui.lazy_view import LazyView, pane_view, watch_first
from workbench.ui.notices import notice
from workbench.ui.results_data import (
    TABLES,
    bundle_rows,
    group_columns,
    provenance,
)
from workbench.ui.results_exact import ExactViews
from workbench.ui.results_tables import TableViews
from workbench.ui.results_views import ResultsViews, alert
from workbench.ui.safe_text import TextTable, html_text, md_lines
from workbench.ui.workspace import inside, results_dir_param, workspace_param
from workbench.viz import plots

__all__ = ["PAGE_SIZES", "VIEWS", "ResultsExplorer"]

PAGE_SIZES = (10, 25, 50, 100)
"""The choices of rows per page."""

VIEWS = ("Plots", "Exact", "Compare", "Provenance", "Tables")
"""The explorer's tabs, in order."""


def _row(bundles: pd.DataFrame, run_id: str | None) -> list[dict[str, Any]]:
    """A bundle's row of a listing, as plain records (none when it is not listed)."""
    return bundles[bundles["run_id"] == run_id].to_dict("records")


# --------------------------------------------------------------------------- the component


class ResultsExplorer(ResultsViews, ExactViews, TableViews, pn.viewable.Viewer):
    """Browse the result bundles of a folder: pick one, plot it, compare it, check it.

    Set `results_dir` (or call `refresh()` after new runs), choose `run_id`, then `by`, `kind`
    and `round` for the distribution; `compared` for bundles side by side; `table` for the
    table shown and downloaded; `await verify()` checks the chosen bundle.
    """

    results_dir = results_dir_param(
        "The folder whose sub-folders are the bundles listed (a run's --out folder); "
        "inside `workspace` when that is set."
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
        default="heatmap",
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
    numerics = param.Dict(
        default={},
        doc="The engine's numerics measured on a bundle's round-1 prompts (the Exact view's "
        "Measure numerics: bench noise's largest group shift, or why it could not run), by "
        "bundle and column (`results_exact.numerics_key`).",
    )
    measuring = param.Boolean(default=False, doc="Whether the numerics are being measured.")
    shown = param.Boolean(
        default=True,
        doc="Whether the explorer is on screen; hidden, nothing is drawn (the dashboard sets it "
        "as its Results tab opens and closes).",
    )
    view = param.Selector(default=VIEWS[0], objects=list(VIEWS), doc="The tab shown.")
    download_url = param.String(
        default=None,
        allow_None=True,
        doc="Where the dashboard serves bundle tables (`ui/server/downloads.py`, relative to the "
        "page): the downloads are links there; None (inline): FileDownload buttons.",
    )
    hint = param.String(
        default="",
        doc="What fills an empty results folder, said with it ('' : run a game into it with "
        "the CLI); the dashboard names its Run tab.",
    )
    reads = param.Integer(
        default=0,
        doc="How many times refresh() has read the folder: the chosen bundle's views redraw on "
        "it (a live run moved on) even when the same bundle stays chosen.",
    )

    def __init__(self, **params: Any) -> None:
        self._opened: dict[str, Bundle] = {}
        self._tables: dict[tuple[str, str], pd.DataFrame] = {}
        self._holding = True  # no drawing until the page exists and the state is settled
        self._last_round: int | None = None  # the chosen bundle's last round, when last read
        self._choices: dict[str, Any] = {}  # the choices last set, by param
        super().__init__(**params)
        self._page = self._build()
        self.refresh()
        self.param.watch(self._show, list(SHOWN_BY))
        self.param.watch(self._open_view, "view")  # after _show: the tab goes out drawn

    # ------------------------------------------------------------------ state

    @param.depends("results_dir", watch=True)
    def refresh(self) -> None:
        """Read results_dir again: the bundle list, the damaged folders, the choices; keeps the
        chosen bundle when it is still there (else the newest) and reopens it (a live run).
        What did not change is not set again, so a refresh that finds nothing new leaves the
        page as it is; the views on screen are drawn once, when the state is settled."""
        self._holding = True
        try:
            self._read_folder()
        finally:
            self._holding = False
        self._show()

    def _read_folder(self) -> None:
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
        changed = {"damaged": damaged, "problem": problem}
        if not rows.equals(self.bundles):
            changed["bundles"] = rows
        self.param.update(**changed)
        self._choose("run_id", names)
        # the compare picker (Bokeh's MultiChoice) shows its labels as HTML: escaped
        if self._choose("compared", {html_text(i): i for i in ids}):
            self.compared = [i for i in self.compared if i in ids]
        # `reads` (never `param.trigger("run_id")`) redraws the same bundle's views when its
        # listing moved: a trigger reached the empty Round / Group-by selects, which set their
        # value again inside it, each time triggering themselves (a RecursionError in Panel's
        # Select)
        same = keep == self.run_id
        self.param.update(run_id=keep, reads=self.reads + 1 if same and moved else self.reads)

    @param.depends("run_id", "reads", watch=True)
    def _chosen_changed(self) -> None:
        """A new bundle, or the chosen one read again: its persona columns and rounds become
        the choices. `by` stays when the bundle has it; the round is the bundle's last, unless
        the user picked an earlier one that this bundle played (a live run read again follows
        its last round; a finished run opened after it starts at its last); the old report
        goes."""
        self._tables.clear()
        columns: list[str] = []
        rounds: list[int] = []
        try:
            bundle = self.bundle()
            columns = group_columns(bundle)
            rounds = [entry["round"] for entry in bundle.rounds_done]
        except WorkbenchError:
            pass
        first = (self._group_by(), "education", *columns)
        by = self.by if self.by in columns else next((c for c in first if c in columns), None)
        last = rounds[-1] if rounds else None
        earlier = self.round not in (None, self._last_round)  # the user chose an earlier one
        number = self.round if earlier and self.round in rounds else last
        self._last_round = last
        holding, self._holding = self._holding, True  # one draw, once by and round are set
        try:
            self._choose("by", columns)
            self._choose("round", rounds)
            self.param.update(by=by, round=number, report=None)
        finally:
            self._holding = holding

    def _choose(self, name: str, objects: list[Any] | dict[str, Any]) -> bool:
        """Set param `name`'s choices when they changed (a drawn select is sent them each
        time they are set); whether they changed."""
        if name in self._choices and self._choices[name] == objects:
            return False
        self._choices[name] = objects
        self.param[name].objects = objects
        return True

    def _group_by(self) -> str | None:
        """The chosen bundle's game.group_by (None when it has none or cannot say)."""
        try:
            return self.bundle().config.game.group_by
        except WorkbenchError:
            return None

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
        """Why no bundle is shown, with the one action that changes it."""
        if self.problem:
            return self.problem
        folder = Path(self.results_dir)
        if not inside(self.workspace, folder).is_dir():  # a launch makes the dashboard's
            return f"{folder}: no such folder yet; {self.hint or 'type a folder of bundles above'}"
        hint = (
            self.hint or f"run a game into it (workbench run CONFIG --out {folder}), then Refresh"
        )
        return f"{folder}: no bundles here yet; {hint}"

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

    @param.depends("report", "verifying")
    def report_view(self) -> Any:
        """What verify found: ok in green, the problems in red."""
        if self.verifying:
            return alert("verifying...", "info")
        if self.report is None:
            return None
        kind = "success" if self.report.ok else "danger"
        return notice(md_lines(self.report), kind, margin=(5, 10))

    # ------------------------------------------------------------------ the page

    def _key(self, *names: str) -> Callable[[], Hashable]:
        """What a view shows: the chosen bundle (read `reads` times) and params `names`."""
        return lambda: (self.run_id, self.reads, *(_hashable(getattr(self, n)) for n in names))

    def _show(self, *_events: Any) -> None:
        """Draw the views on screen whose content changed (nothing while hidden or while the
        state is being set)."""
        if self._holding or not self.shown:
            return
        self._status.show()
        there = self.run_id is not None
        if self._picker.visible != (not self.bundles.empty):
            self._picker.visible = not self.bundles.empty
        if self._tabs.visible != there:
            self._tabs.visible = there
        if there:
            for view in self._views[self.view]:
                view.show()

    def _tab_opened(self, event: param.parameterized.Event) -> None:
        """A tab was opened: draw it before the tabs send it to the browser (this watcher runs
        first), so its content is sent once, complete."""
        self.view = VIEWS[event.new]

    def _open_view(self, _event: Any) -> None:
        """`view` set in code: open its tab (already drawn by `_show`)."""
        self._tabs.active = VIEWS.index(self.view)

    def _build(self) -> pn.Column:
        """The page: the picker, then the views as tabs, each drawn lazily."""
        refresh = pn.widgets.Button(label="Refresh", variant="outline")
        refresh.on_click(lambda _: self.refresh())
        verify = pn.widgets.Button(label="Verify", color="primary", disabled=self.param.verifying)
        verify.on_click(self._on_verify)
        status, self._status = pane_view(
            lambda: (self.reads, self.run_id, self.problem, self.results_dir,
                     _hashable(self.damaged), self.bundles.empty),
            self.status_view,
        )  # fmt: skip
        self._bundle_table = TextTable(
            self.param.bundles,
            css_classes=["wb-results-bundles"],
            pagination="remote",
            page_size=10,
            disabled=True,
            show_index=False,
            hidden_columns=["path"],
            layout="fit_columns",  # the page's width shared out: no measuring of every cell
            sizing_mode="stretch_width",
        )
        self._picker = pn.Column(
            pn.widgets.Select.from_param(self.param.run_id, label="Bundle"),
            self._bundle_table,
            pn.Row(verify),
            pn.panel(self.report_view),
            sizing_mode="stretch_width",
        )
        folder = pn.Row(
            pn.widgets.TextInput.from_param(self.param.results_dir, label="Results folder"),
            refresh,
        )
        plots_tab, plot_views = self._plots_tab()
        compare, compare_view = pane_view(self._key("compared"), self.compare_view)
        provenance_tab, provenance_view = pane_view(self._key(), self.provenance_view)
        tables_tab, table_view = self._tables_tab()
        exact, exact_view = pane_view(self._key("round", "by", "numerics"), self.exact_view)
        exact_tab = pn.Column(
            pn.Row(
                pn.widgets.Select.from_param(self.param.round, label="Round"),
                pn.widgets.Select.from_param(self.param.by, label="Group by"),
            ),
            exact,
            sizing_mode="stretch_width",
        )
        self._views: dict[str, list[LazyView]] = {
            "Plots": plot_views,
            "Exact": [exact_view],
            "Compare": [compare_view],
            "Provenance": [provenance_view],
            "Tables": [table_view],
        }
        compare_tab = pn.Column(
            pn.widgets.MultiChoice.from_param(self.param.compared, label="Bundles to compare"),
            compare,
            sizing_mode="stretch_width",
        )
        tabs = (plots_tab, exact_tab, compare_tab, provenance_tab, tables_tab)
        self._tabs = pn.Tabs(
            *zip(VIEWS, tabs, strict=True),
            active=VIEWS.index(self.view),
            dynamic=True,
            sizing_mode="stretch_width",
        )
        # before the tabs' own watcher (precedence 0) renders the opened tab: drawn once
        watch_first(self._tabs, self._tab_opened, "active")
        status.css_classes = ["wb-results-status"]
        return pn.Column(
            folder,
            status,
            self._picker,
            self._tabs,
            sizing_mode="stretch_width",
            css_classes=["wb-results"],
        )

    def _plots_tab(self) -> tuple[pn.Column, list[LazyView]]:
        histogram, histogram_view = pane_view(self._key("round"), self.histogram_view)
        histogram.css_classes = ["wb-results-histogram"]
        distribution, distribution_view = pane_view(
            self._key("round", "by", "kind"), self.distribution_view
        )
        trajectories, trajectories_view = pane_view(
            self._key("by", "trajectories_by_group"), self.trajectories_view
        )
        tab = pn.Column(
            pn.widgets.Select.from_param(self.param.round, label="Round"),
            histogram,
            pn.Row(
                pn.widgets.Select.from_param(self.param.by, label="Group by"),
                pn.widgets.RadioButtonGroup.from_param(self.param.kind),
            ),
            distribution,
            pn.widgets.Checkbox.from_param(
                self.param.trajectories_by_group, label="Trajectories per group"
            ),
            trajectories,
            sizing_mode="stretch_width",
        )
        return tab, [histogram_view, distribution_view, trajectories_view]

    def __panel__(self) -> pn.viewable.Viewable:
        return self._page

    async def _on_verify(self, _event: Any) -> None:
        await self.verify()


SHOWN_BY = (
    "shown", "view", "run_id", "reads", "round", "by", "kind", "trajectories_by_group",
    "compared", "table", "bundles", "damaged", "problem", "numerics",
)  # fmt: skip
"""The params whose change may change what is on screen."""


def _hashable(value: Any) -> Hashable:
    """A param's value as part of a view's key (lists and dicts as tuples)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    return value
