"""The whole workbench as one Panel app: the components as tabs.

`WorkbenchApp` wires the components together (the editor's spec feeds the persona preview and
the run launcher; a finished launch refreshes the results explorer) and is a plain layout
inline (`%workbench`, `pn.ipywidget(WorkbenchApp())`); served (`ui/server/dashboard.py`, what
`workbench dashboard` runs), it sits in a page shell (`pmui.Page`).
"""

from __future__ import annotations

from typing import Any

import panel as pn
import param

from workbench.config import PopulationSpec
from workbench.errors import WorkbenchError
from workbench.results import Bundle
from workbench.runs.limits import MAX_AGENT_ROUNDS, MAX_LIVE_LAUNCHES
from workbench.ui.cluster_monitor import ClusterMonitor
from workbench.ui.layout_guard import LayoutGuard
from workbench.ui.lazy_view import watch_first
from workbench.ui.page_state import PageState, read_state, write_state
from workbench.ui.persona_preview import PersonaPreview
from workbench.ui.population_editor import PopulationEditor
from workbench.ui.results_explorer import ResultsExplorer
from workbench.ui.run_launcher import RunLauncher
from workbench.ui.workspace import dashboard_folders, results_dir_param

TITLE = "Agent Simulation Workbench"
"""The page's title (browser tab and header)."""

TABS = ("Population", "Run", "Results", "Cluster")
"""The app's tabs, in order."""


def quickstart_population() -> PopulationSpec:
    """The population the editor starts from: the quickstart's (the paper's education one)."""
    from workbench._examples import example_path
    from workbench.config import load_run_config

    population = load_run_config(example_path("quickstart")).population
    assert isinstance(population, PopulationSpec)  # a loaded config holds the resolved spec
    return population


class WorkbenchApp(pn.viewable.Viewer):
    """Population editor and persona preview, run launcher, results explorer, cluster monitor."""

    results_dir = results_dir_param(
        "where runs write their bundles and where the explorer and monitor look"
    )
    ray_address = param.String(
        None,
        allow_None=True,
        doc="the Ray cluster runs use and the monitor shows (None: a Ray run starts its own)",
    )
    workspace = param.String(
        None,
        allow_None=True,
        doc="the one folder the page may read and write (YAML load and save, results folders, "
        "replay bundles); None: the results folder itself, the one folder the owner named",
    )
    max_live_runs = param.Integer(
        MAX_LIVE_LAUNCHES, bounds=(1, None), doc="runs launched here that may run at once"
    )
    max_agent_rounds = param.Integer(
        MAX_AGENT_ROUNDS, bounds=(1, None), doc="the most agents x rounds of one launched run"
    )
    tab = param.Selector(objects=list(TABS), default=TABS[0], doc="the tab shown first")
    keep_state = param.Boolean(
        True,
        doc="start from the page state kept in the results folder and keep every change "
        "there (`ui.page_state`), so a reload or a new page shows the same edits",
    )
    fresh = param.Boolean(
        False, doc="start from the defaults, not the kept state (changes are still kept)"
    )
    state_note = param.String("", doc="output: why the kept page state was not used, if so")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        folder, root = dashboard_folders(self.results_dir, self.workspace)
        results, workspace = str(folder), str(root)
        self.editor = PopulationEditor(spec=quickstart_population(), n=50, workspace=workspace)
        self.preview = PersonaPreview.for_editor(self.editor)
        self.launcher = RunLauncher.for_editor(
            self.editor,
            results_dir=results,
            ray_address=self.ray_address,
            workspace=workspace,
            max_live_runs=self.max_live_runs,
            max_agent_rounds=self.max_agent_rounds,
        )
        self.explorer = ResultsExplorer(
            results_dir=results,
            workspace=workspace,
            shown=self.tab == "Results",
            hint="launch a run from the Run tab; it is listed here when you come back",
        )
        self.monitor = ClusterMonitor(
            results_dir=results, ray_address=self.ray_address, workspace=workspace
        )
        self._finished: str | None = None  # a launch finished since the explorer last looked
        self.launcher.param.watch(self._run_finished, "finished_bundle")
        if self.keep_state:
            if not self.fresh:
                self._restore(results)
            self._keep(results)

    # ---- the page's state -------------------------------------------------------------------

    def _restore(self, results: str) -> None:
        """Start from the state kept in the results folder: each part that its own validation
        accepts (a part it refuses is left at its default, and `state_note` says so)."""
        state, why = read_state(results)
        notes = [why] if why else []
        if state is not None:
            notes += _restored(self.editor, self.launcher, state)
        self.state_note = "; ".join(notes)

    def _keep(self, results: str) -> None:
        """Write the page's state to the results folder after every edit."""

        def keep(*_: Any) -> None:
            write_state(results, _page_state(self.editor, self.launcher))

        self.editor.param.watch(keep, list(EDITOR_STATE))
        self.launcher.param.watch(keep, ["values", "config_path"])

    def _run_finished(self, event: param.parameterized.Event) -> None:
        """A launch finished: the explorer shows it when its tab is opened next."""
        if event.new:
            self._finished = str(event.new)

    def _tab_opened(self, event: param.parameterized.Event) -> None:
        """A tab was opened. The results tab: list the bundles again and show the finished run,
        drawn before the tabs send it (`watch_first`), so it goes to the browser once; the
        explorer draws nothing while another tab is open."""
        if TABS[event.new] != "Results":
            self.explorer.shown = False
            return
        self.explorer.param.update(shown=False)  # settled first, then drawn once
        self.explorer.refresh()
        finished, self._finished = self._finished, None
        if finished:
            run_id = Bundle.open(finished).run_id
            if run_id in self.explorer.param.compared.objects:
                self.explorer.run_id = run_id
        self.explorer.shown = True

    def tabs(self, kind: type[pn.Tabs] = pn.Tabs) -> Any:
        """The components as tabs of `kind` (the population tab holds the editor and the
        preview). Only the open tab is drawn (`dynamic`): the tables of a hidden tab that
        changed (a launcher following a run, a monitor refreshing) would reach a browser that
        has no room drawn for them, which breaks Tabulator's JavaScript."""
        population = pn.FlexBox(  # side by side where they fit, stacked in a narrow panel
            self.editor, self.preview, sizing_mode="stretch_width", flex_wrap="wrap"
        )
        panes = (population, self.launcher, self.explorer, self.monitor)
        tabs = kind(*zip(TABS, panes, strict=True), active=TABS.index(self.tab), dynamic=True)
        watch_first(tabs, self._tab_opened, "active")
        return tabs

    def page(self) -> pn.viewable.Viewable:
        """The tabs in the served page shell (a title bar over the whole window); its own
        material tabs, which lay out inside it (Panel's own tabs overflow its main area).

        The shell's busy bar is off and unbound from `pn.state.busy`: the page's own polling
        (the launcher and the monitor, every second) turns busy on and off, and each change
        of a shell property walks every model of the page on the server (`Model.select` in
        Panel's `_patch_datamodel_ref`): 12-27 ms a change, about a quarter of a core per open
        page, for a bar that flickered with every poll. Each component says its own progress.
        """
        import panel_material_ui as pmui
        from panel.util import edit_readonly

        page = pmui.Page(
            title=TITLE, main=[LayoutGuard(), self.tabs(pmui.Tabs)], busy_indicator=None
        )
        with edit_readonly(page):
            page.busy = False  # a value in place of the reference: no longer follows the state
        return page

    def __panel__(self) -> pn.viewable.Viewable:
        """The page shell in a server's session (`workbench dashboard`, `panel serve`), the
        plain tabs inline (a notebook, an ipywidget)."""
        return self.page() if in_server_session() else self.tabs()


EDITOR_STATE = (
    "dimensions", "population_name", "description", "sampling", "persona_template", "n", "seed",
)  # fmt: skip
"""The editor's params a page keeps (the population's data, its N and seed)."""


def _page_state(editor: PopulationEditor, launcher: RunLauncher) -> PageState:
    """The page's edits now."""
    return PageState(
        population=editor.data(),
        n_agents=editor.n,
        seed=editor.seed,
        values=dict(launcher.values),
        config_path=launcher.config_path,
    )


def _restored(editor: PopulationEditor, launcher: RunLauncher, state: PageState) -> list[str]:
    """Put a kept state back into the editor and the launcher, each part through its own
    check; one note per part that was refused (it keeps its default)."""
    notes = []
    if state.population is not None:
        try:
            editor.set_data(state.population, editor.source)
        except WorkbenchError as exc:
            notes.append(f"kept population not used: {exc}")
    for name, value in (("n", state.n_agents), ("seed", state.seed)):
        if value is not None:
            try:
                setattr(editor, name, value)
            except ValueError:
                notes.append(f"kept {name} {value} not used: out of range")
    usable, refused = launcher.usable_values(state.values)
    launcher.set(**usable)
    if refused:
        notes.append(f"kept settings not used: {', '.join(refused)}")
    if state.config_path:
        launcher.config_path = state.config_path
    return notes


def in_server_session() -> bool:
    """Whether this runs for a Bokeh server's session (Panel's `pn.state.served` only tells
    whether the caller's module is a `panel serve` script)."""
    doc = pn.state.curdoc
    return doc is not None and doc.session_context is not None
