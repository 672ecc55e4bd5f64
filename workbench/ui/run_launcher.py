"""RunLauncher: set up a game, start it as a detached run, follow it live, see its result.

The settings (game, prompt variant, policy, model or endpoint, backend) become one `RunConfig`,
validated as the CLI validates it; Run hands it to `workbench.runs.launcher.launch` off the
event loop, which checks the model (an unreachable endpoint is named in the page before
anything starts) and starts `workbench run --run-id` in its own process. Progress comes from the
bundle's events on disk (`runs.follower.RunFollower`, reading only what was appended), and its
status from the one status function (`runs.launch_states`), refreshed by a periodic callback
when served or by `refresh()`: per shard, per round, the status a dead writer cannot fake. A new
RunLauncher on the same results folder re-attaches to the newest live run, so a reloaded page or
a restarted dashboard shows it again. While it plays, the round in play is drawn as its shards'
part files land (`live_round_view`). A finished run shows its guesses by a persona column
(`viz.plots`), and `finished_bundle` tells the page which bundle it was.
"""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter

from workbench.config import RunConfig
from workbench.errors import WorkbenchError
from workbench.results import Bundle
from workbench.results.layout import MANIFEST
from workbench.results.live_round import RoundSoFar
from workbench.results.round_table import ROUND_TABLE
from workbench.results.run_statuses import RunStatus
from workbench.runs.cancelling import cancel
from workbench.runs.follower import RunFollower
from workbench.runs.launch_states import (
    LaunchState,
    bundle_state,
    launch_state,
    launches,
    running_bundles,
)
from workbench.runs.launcher import check_model, launch
from workbench.runs.limits import MAX_AGENT_ROUNDS, MAX_LIVE_LAUNCHES
from workbench.runs.records import Launch
from workbench.ui.estimate_view import EstimateShown, run_estimate
from workbench.ui.launch_settings import LaunchSettings, quickstart_population
from workbench.ui.live_round_view import LiveRounds, live_view
from workbench.ui.notices import notice
from workbench.ui.run_clock import RunClock, status_line
from workbench.ui.run_population import PopulationPicker, who_plays
from workbench.ui.run_tables import (
    LAUNCH_COLUMNS,
    ROUND_FORMATS,
    SHARD_COLUMNS,
    launches_table,
    round_table,
    shard_table,
)
from workbench.ui.safe_text import TextTable, md
from workbench.viz import plots

__all__ = ["CSS", "LaunchSettings", "RunLauncher", "quickstart_population"]

CSS = {
    "run": "wb-launcher-run",
    "cancel": "wb-launcher-cancel",
    "check": "wb-launcher-check",
    "message": "wb-launcher-message",
    "check_message": "wb-launcher-check-message",
    "estimate": "wb-launcher-estimate",
    "status": "wb-launcher-status",
    "error": "wb-launcher-error",
    "shards": "wb-launcher-shards",
    "rounds": "wb-launcher-rounds",
    "launches": "wb-launcher-launches",
    "result": "wb-launcher-result",
    "live": "wb-launcher-live",
    "launcher": "wb-launcher",
    "settings": "wb-launcher-settings",
    "settings_toggle": "wb-launcher-settings-toggle",
    "problem": "wb-launcher-problem",
    "who": "wb-launcher-who",
}
"""The stable CSS classes of the page's key parts (for browser tests and styling)."""

LIVE = (RunStatus.RUNNING,)
"""The status of a run that can be cancelled (a launch whose bundle is not written yet too)."""
PAGE_ERRORS = (WorkbenchError, OSError)
"""What a launch, a check or a cancel may raise that the page shows as its message (the
workbench's own errors; a folder that cannot be written); anything else is a bug."""
PROGRESS_WIDTH = 620
"""Pixels of the progress column (round and shard tables); the result's plots sit beside it,
so a 1400-pixel window shows the run's progress and its result without scrolling."""
RESULT_SIZE = {"width": 680, "height": 300}
LAUNCH_WIDTHS = {"launch_id": 240, "started_at": 260, "status": 110, "rounds": 90, "bundle": 240}
"""Pixels of the recent-launches columns; the error takes the rest of the page's width."""
"""The result's plots beside the progress column (the Results tab draws them full size)."""
RECENT_EVERY_S = 5.0
"""How often the periodic refresh reads the recent launches (progress is read every tick)."""


class RunLauncher(LaunchSettings, pn.viewable.Viewer):
    """Game, policy, model and backend settings; Run, Cancel, and the run's live progress.

    `run()` (or `await arun()`, what the Run button does) starts a run; `refresh()` reads its
    progress from disk (a periodic callback does it when served); `cancel_run()` interrupts it.
    Errors never raise into the page: they land in `message` (settings, launch) or `error`
    (the run's own failure).
    """

    # ---- the page ---------------------------------------------------------------------------
    plot_by = param.String(
        "education", doc="persona column the finished run's guesses are drawn by"
    )
    refresh_s = param.Number(
        1.0, bounds=(0.1, 60), doc="seconds between progress refreshes when served"
    )
    recent_limit = param.Integer(10, bounds=(1, 200), doc="launches listed in the recent table")
    max_live_runs = param.Integer(
        MAX_LIVE_LAUNCHES,
        bounds=(1, None),
        doc="runs launched from this results folder that may run at once (the owner's limit)",
    )
    max_agent_rounds = param.Integer(
        MAX_AGENT_ROUNDS,
        bounds=(1, None),
        doc="the most agents x rounds one launched run may play (the owner's limit)",
    )
    on_finished = param.Callable(
        None,
        allow_None=True,
        doc="called with the bundle path when the followed run completes",
    )

    # ---- outputs ----------------------------------------------------------------------------
    check_message = param.String("", doc="output: the Check button's verdict")
    check_failed = param.Boolean(False, doc="output: check_message is an error")
    estimate = param.String(
        "", doc="output: Check's estimate of the run's cost, escaped Markdown ('' without a model)"
    )
    estimate_failed = param.Boolean(False, doc="output: estimate says why it could not be made")
    estimate_s = param.Number(
        None, allow_None=True, doc="output: Check's estimated seconds for the settings checked"
    )
    clock = param.ClassSelector(
        class_=RunClock,
        default=None,
        allow_None=True,
        doc="output: where the followed run stands: the round in play, its answers, the time "
        "taken and left",
    )
    busy = param.Boolean(False, doc="output: a launch or a check is under way")
    launch_id = param.String(None, allow_None=True, doc="output: the followed launch's id")
    bundle = param.String(None, allow_None=True, doc="output: the followed run's bundle path")
    status = param.String(
        "", doc="output: the followed run's status: starting, running, complete, failed, cancelled"
    )
    rounds_done = param.Integer(0, doc="output: rounds the followed run has finished")
    rounds_total = param.Integer(0, doc="output: rounds the followed run plays")
    error = param.String("", doc="output: why the followed run failed or was cancelled")
    shards = param.DataFrame(
        default=pd.DataFrame(columns=list(SHARD_COLUMNS)),
        doc="output: each shard's latest progress (shard, round, node, agents, answered, "
        "state, errors, tokens)",
    )
    round_stats = param.DataFrame(
        default=pd.DataFrame(columns=[*ROUND_TABLE, "note"]),
        doc="output: the followed run's finished rounds (from its RoundFinished events)",
    )
    recent = param.DataFrame(
        default=pd.DataFrame(columns=list(LAUNCH_COLUMNS)),
        doc="output: recent launches, newest first, with status and error",
    )
    settings_open = param.Boolean(
        True, doc="whether the settings are unfolded (they fold when a run starts)"
    )
    finished_bundle = param.String(
        None, allow_None=True, doc="output: the bundle of the followed run once it completed"
    )
    round_so_far = param.ClassSelector(
        class_=RoundSoFar,
        default=None,
        allow_None=True,
        doc="output: the round in play, from the part files its shards have written so far",
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._launch: Launch | None = None
        self._follower: RunFollower | None = None
        self._state: LaunchState | None = None  # what the header shows (one status for all)
        self._listed_at = -math.inf
        self._callbacks: set[int] = set()
        self._live_rounds = LiveRounds()
        self._run_estimate_s: float | None = None  # Check's, for the run launched after it
        self._reattach()
        self.param.watch(self._settings_changed, list(self.CONFIG_INPUTS))

    # ---- actions ----------------------------------------------------------------------------

    def _config_or_message(self) -> RunConfig | None:
        try:
            return self.config()
        except WorkbenchError as exc:
            self._say(_error_text(exc), True)
            return None

    def _started(self, result: Launch | BaseException) -> Launch | None:
        if isinstance(result, BaseException):
            self._say(_error_text(result), True)
            return None
        self._say(f"started {result.launch_id} (pid {result.pid})", False)
        self.attach(result, estimate_s=self.estimate_s)
        return result

    def run(self) -> Launch | None:
        """Validate, check the model and start the run (blocking: for notebooks and tests);
        the launch, or None with the reason in `message`."""
        config = self._config_or_message()
        if config is None or self.busy:
            return None
        self.busy = True
        try:
            result: Launch | BaseException = self._start_launch(config)
        except PAGE_ERRORS as exc:
            result = exc
        finally:
            self.busy = False
        return self._started(result)

    async def arun(self) -> Launch | None:
        """`run()` with the model check and the start in a thread: the page stays live."""
        config = self._config_or_message()
        if config is None or self.busy:
            return None
        self.busy = True
        self._say("checking the model and starting the run ...", False)
        try:
            result: Launch | BaseException = await asyncio.to_thread(self._start_launch, config)
        except PAGE_ERRORS as exc:
            result = exc
        finally:
            self.busy = False
        return self._started(result)

    def _start_launch(self, config: RunConfig) -> Launch:
        """Start `config` as a detached run under the owner's limits."""
        return launch(
            config,
            self.results_dir,
            max_live=self.max_live_runs,
            max_agent_rounds=self.max_agent_rounds,
        )

    def check(self) -> bool:
        """Check the model as a run would and estimate the run's cost (blocking); the verdict
        in `check_message`, the estimate in `estimate`."""
        config = self._config_or_message()
        if config is None:
            return False
        return self._checked(_check(config))

    async def acheck(self) -> bool:
        """`check()` in a thread: the page stays live while an endpoint is asked and the
        estimate walks round 1 on the model."""
        config = self._config_or_message()
        if config is None:
            return False
        self.busy = True
        try:
            verdict = await asyncio.to_thread(_check, config)
        finally:
            self.busy = False
        return self._checked(verdict)

    def _settings_changed(self, *_: Any) -> None:
        """A Check's verdict and estimate were for the settings before: clear them."""
        self._checked((True, "", EstimateShown()))

    def _checked(self, verdict: tuple[bool, str, EstimateShown]) -> bool:
        ok, text, shown = verdict
        with param.parameterized.batch_call_watchers(self):
            self.check_message, self.check_failed = text, not ok
            self.estimate, self.estimate_failed = shown.markdown, shown.failed
            self.estimate_s = shown.seconds
        return ok

    def cancel_run(self) -> bool:
        """Interrupt the followed run (`runs.cancelling.cancel`: SIGINT to its process once it
        is proven to be the launch's own run; it marks the bundle cancelled)."""
        target: Launch | Path | None = self._launch
        if target is None and self.bundle:
            target = Path(self.bundle)
        if target is None:
            self._say("no run to cancel", True)
            return False
        try:
            pid = cancel(target)
        except PAGE_ERRORS as exc:
            self._say(_error_text(exc), True)
            return False
        self._say(f"cancel sent to the run (pid {pid}); it marks its bundle cancelled", False)
        return True

    # ---- following --------------------------------------------------------------------------

    def attach(self, target: Launch | str | Path, estimate_s: float | None = None) -> None:
        """Follow a launch, or a bundle (its run started anywhere); then `refresh()`.
        `estimate_s`: the run's estimated seconds, when Check made one for its settings."""
        self._launch, self._follower = None, None
        self._run_estimate_s = estimate_s
        if isinstance(target, Launch):
            self._launch = target
            self._follower = RunFollower(target.bundle)  # its run id names it: no search
        else:
            self._follower = RunFollower(Path(target))
        with param.parameterized.batch_call_watchers(self):
            self.finished_bundle = None
            self.launch_id = self._launch.launch_id if self._launch else None
            self.bundle = str(self._follower.bundle) if self._follower else None
            self.status, self.error, self.rounds_done = RunStatus.RUNNING, "", 0
            self.round_so_far = None
            self.settings_open = False  # the run's progress comes up where the settings were
        self.refresh()

    @param.depends("results_dir", watch=True)
    def _reattach(self) -> None:
        """Follow the newest live launch in results_dir, else the newest live bundle."""
        self._launch, self._follower = None, None
        live: LaunchState | None = next(
            (s for s in launches(self.results_dir, self.recent_limit) if s.status in LIVE), None
        )
        if live is not None and live.launch is not None:
            self.attach(live.launch)
            return
        bundles = running_bundles(self.results_dir)
        if bundles:
            self.attach(bundles[0])
            return
        with param.parameterized.batch_call_watchers(self):
            self.launch_id = self.bundle = self.finished_bundle = None
            self._show(None)
        self._list_recent()

    def _current(self) -> LaunchState | None:
        """The followed run's state now (the bundle's new events only, once it has one)."""
        if self._follower is None:
            return None
        if self._launch is not None and not (self._follower.bundle / MANIFEST).is_file():
            return launch_state(self._launch)  # its process starts, or ended before writing
        return bundle_state(self._follower.bundle, self._launch, run=self._follower.poll())

    def refresh(self, *, recent: bool = True) -> None:
        """Read the followed run's progress (its new events only) and, with `recent`, the
        recent launches from disk."""
        was = (self.status, self.rounds_done)
        self._show(self._current())
        if recent or (self.status, self.rounds_done) != was:
            self._list_recent()

    def _tick(self) -> None:
        """The periodic refresh: progress every tick, the recent list every RECENT_EVERY_S."""
        self.refresh(recent=time.monotonic() - self._listed_at > RECENT_EVERY_S)

    def _list_recent(self) -> None:
        found = launches(self.results_dir, self.recent_limit)
        self._set_frame("recent", launches_table(found, self._state))
        self._listed_at = time.monotonic()

    def _show(self, state: LaunchState | None) -> None:
        self._state = state
        was = self.status
        run = state.run if state is not None else None
        with param.parameterized.batch_call_watchers(self):
            self._set_frame("shards", shard_table(run))
            self._set_frame("round_stats", round_table(run))
            if state is None:
                self.status, self.error, self.rounds_done, self.rounds_total = "", "", 0, 0
                self.clock = None
                return
            self.clock = RunClock.of(state, self._run_estimate_s)
            self.status = state.status
            self.error = state.error or ""
            self.rounds_done, self.rounds_total = state.rounds_done, state.rounds
            self.bundle = str(state.bundle) if state.bundle is not None else None
            self._read_round(state)
        done = RunStatus.COMPLETE
        if state.status == done and was != done and state.bundle is not None:
            self.finished_bundle = str(state.bundle)
            if self.on_finished is not None:
                self.on_finished(str(state.bundle))

    def _read_round(self, state: LaunchState) -> None:
        """The round in play so far (the part files that landed since the last tick only)."""
        number = state.rounds_done + 1
        if state.status not in LIVE or state.bundle is None or number > state.rounds:
            return
        try:
            so_far = self._live_rounds.poll(state.bundle, number)
        except PAGE_ERRORS:
            return  # a part or folder that cannot be read: the finished round shows as before
        if so_far is not self.round_so_far:
            self.round_so_far = so_far

    def _set_frame(self, name: str, frame: pd.DataFrame) -> None:
        """Set a table param only when it changed: an unchanged table sends nothing."""
        if not frame.equals(getattr(self, name)):
            setattr(self, name, frame)

    # ---- the page ---------------------------------------------------------------------------

    def __panel__(self) -> pn.viewable.Viewable:
        """Settings, Run / Check / Cancel, messages, status, shard and round tables, result."""
        run = pn.widgets.Button(
            label="Run", color="primary", disabled=self.param.busy, css_classes=[CSS["run"]]
        )
        run.on_click(self._on_run)
        check = pn.widgets.Button(
            label="Check",
            color="primary",
            variant="outline",
            disabled=self.param.busy,
            css_classes=[CSS["check"]],
        )
        check.on_click(self._on_check)
        cancel_button = pn.widgets.Button(
            label="Cancel",
            color="danger",
            variant="outline",
            disabled=pn.bind(lambda s: s not in LIVE, self.param.status),
            css_classes=[CSS["cancel"]],
        )
        cancel_button.on_click(lambda _: self.cancel_run())
        doc = pn.state.curdoc
        if doc is not None and id(doc) not in self._callbacks:  # served or rendered: poll disk
            self._callbacks.add(id(doc))
            pn.state.add_periodic_callback(self._tick, period=int(self.refresh_s * 1000))
        table = {
            "disabled": True,
            "show_index": False,
            "pagination": "remote",
            "page_size": 10,
            "layout": "fit_data_table",
            "max_width": PROGRESS_WIDTH,
        }
        picker = PopulationPicker(self, self.workspace, self._say)
        who = pn.Row(
            pn.pane.Markdown(
                pn.bind(
                    who_plays,
                    self.param.population,
                    self.param.n_agents,
                    self.param.seed,
                    self.param.population_problem,
                ),
                css_classes=[CSS["who"]],
                sizing_mode="stretch_width",
            ),
            picker.select,
            sizing_mode="stretch_width",
        )
        settings = self._settings_fold()
        return pn.Column(
            pn.Row(
                run,
                cancel_button,
                check,
                pn.indicators.LoadingSpinner(value=self.param.busy, size=24),
                pn.pane.Markdown(
                    pn.bind(status_line, self.param.status, self.param.clock, self.param.bundle),
                    css_classes=[CSS["status"]],
                    align="center",
                ),
            ),
            pn.bind(_alert, self.param.message, self.param.message_failed, CSS["message"]),
            pn.bind(
                _alert, self.param.check_message, self.param.check_failed, CSS["check_message"]
            ),
            pn.bind(
                lambda text, failed: notice(text, "danger" if failed else "info", CSS["estimate"]),
                self.param.estimate,
                self.param.estimate_failed,
            ),
            pn.bind(_alert, self.param.problem, True, CSS["problem"]),
            pn.bind(_error_alert, self.param.error, self.param.status),
            who,
            settings,
            pn.Row(
                pn.Column(
                    pn.pane.Markdown("### Rounds"),
                    TextTable.from_param(
                        self.param.round_stats,
                        css_classes=[CSS["rounds"]],
                        formatters={h: NumberFormatter(format=f) for h, f in ROUND_FORMATS.items()},
                        **table,
                    ),
                    pn.pane.Markdown("### Shards"),
                    TextTable.from_param(self.param.shards, css_classes=[CSS["shards"]], **table),
                    width=PROGRESS_WIDTH,
                ),
                pn.bind(
                    self._result_view,
                    self.param.finished_bundle,
                    self.param.plot_by,
                    self.param.bundle,
                    self.param.rounds_done,
                    self.param.status,
                    self.param.round_so_far,
                ),
                sizing_mode="stretch_width",
            ),
            pn.pane.Markdown("### Recent launches"),
            TextTable.from_param(  # the page's whole width: its errors are long lines
                self.param.recent,
                css_classes=[CSS["launches"]],
                **{**table, "max_width": None, "layout": "fit_data_stretch"},
                widths=LAUNCH_WIDTHS,  # set, not fitted: a row's bundle arrives after its start
                sizing_mode="stretch_width",
            ),
            css_classes=[CSS["launcher"]],
            sizing_mode="stretch_width",
        )

    def _settings_fold(self) -> pn.viewable.Viewable:
        """The settings under a button that folds and unfolds them (`settings_open`). Not a
        Card: a collapsed Card drawn again after a tab trip (the tabs are dynamic) came back
        empty when unfolded; a Column's `visible` keeps its children drawn."""
        toggle = pn.widgets.Button(
            label=pn.bind(_settings_title, self.param.settings_open),
            color="primary",
            variant="outline",
            css_classes=[CSS["settings_toggle"]],
        )
        toggle.on_click(lambda _: setattr(self, "settings_open", not self.settings_open))
        body = pn.Column(
            self.settings_view(), visible=self.param.settings_open, sizing_mode="stretch_width"
        )
        return pn.Column(toggle, body, sizing_mode="stretch_width", css_classes=[CSS["settings"]])

    async def _on_run(self, _: Any) -> None:
        await self.arun()

    async def _on_check(self, _: Any) -> None:
        await self.acheck()

    def _result_view(
        self,
        bundle: str | None,
        by: str,
        live: str | None = None,
        done: int = 0,
        status: str = "",
        so_far: RoundSoFar | None = None,
    ) -> pn.viewable.Viewable:
        """The completed run's histogram and its guesses by `by` (or, when its population
        has no such dimension, by its first); while a run plays, the round in play as its
        shards come in (`live_round_view`), or its last finished round."""
        if not bundle:
            if live and status in LIVE:
                means = self.round_stats["mean"].dropna().tolist()
                shards = len(self.shards)
                total = self.rounds_total
                return live_view(live, done, total, so_far, shards, means, RESULT_SIZE, CSS["live"])
            return pn.Column(visible=False)
        try:
            parts: list[Any] = [pn.pane.HoloViews(plots.histogram(bundle).opts(**RESULT_SIZE))]
            population = Bundle.open(bundle).config.population
            names = [d.name for d in getattr(population, "dimensions", [])]
            column = by if by in names else (names[0] if names else None)
            if column is not None:
                heatmap = plots.distribution(bundle, column, kind="heatmap")
                parts.append(pn.pane.Markdown(f"Guesses by **{md(column)}**"))
                parts.append(pn.pane.HoloViews(heatmap.opts(**RESULT_SIZE)))
        except WorkbenchError as exc:
            return _alert(_error_text(exc), True, CSS["result"])
        return pn.Column(pn.pane.Markdown("### Result"), *parts, css_classes=[CSS["result"]])


def _settings_title(open_: bool) -> str:
    """The settings card's title, saying what a click on it does."""
    return "Settings ▾ (click to fold them)" if open_ else "Settings ▸ (click to change them)"


def _error_text(exc: BaseException) -> str:
    """A WorkbenchError's own message (what the CLI prints after `error: `)."""
    return str(exc) if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {exc}"


def _check(config: RunConfig) -> tuple[bool, str, EstimateShown]:
    """(ok, what was checked or why it failed) for a config's model, then, when it answers,
    (the run's estimate as escaped Markdown, whether estimating failed)."""
    try:
        checked = check_model(config)
    except PAGE_ERRORS as exc:
        return False, _error_text(exc), EstimateShown()
    return True, checked, run_estimate(config)


def _alert(text: str, failed: bool, css: str) -> pn.viewable.Viewable:
    return notice(md(text), "danger" if failed else "info", css)


def _error_alert(error: str, status: str) -> pn.viewable.Viewable:
    known = RunStatus.of(status)
    shown = bool(error) and known is not None and known.resumable  # it stopped short
    level = "warning" if known is RunStatus.CANCELLED else "danger"
    return notice(md(f"{status}: {error}") if shown else "", level, CSS["error"])
