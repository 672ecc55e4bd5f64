"""RunLauncher: set up a game, start it as a detached run, follow it live, see its result.

The settings (game, prompt variant, policy, model or endpoint, backend) become one `RunConfig`,
validated as the CLI validates it; Run hands it to `launches.launch` off the event loop, which
checks the model (an unreachable endpoint is named in the page before anything starts) and
starts `workbench run` in its own process. Progress comes from the bundle's events on disk
(`launches.RunFollower`, reading only what was appended), refreshed by a periodic callback when
served or by `refresh()`: per shard, per round, the status a dead writer cannot fake. A new
RunLauncher on the same results folder re-attaches to the newest live run, so a reloaded page or
a restarted dashboard shows it again. A finished run shows its guesses by a persona column
(`viz.plots`), and `finished_bundle` tells the page which bundle it was.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import panel as pn
import param

from workbench._examples import example_path
from workbench.config import (
    EXTRACT_NUMBER_CHOICES,
    MAX_AGENTS,
    POLICY_KINDS,
    PopulationSpec,
    RunConfig,
    load_run_config,
    validate,
)
from workbench.errors import WorkbenchError
from workbench.runtime.events import RunState
from workbench.ui.launches import (
    LAUNCH_COLUMNS,
    ROUND_COLUMNS,
    SHARD_COLUMNS,
    Launch,
    LaunchState,
    RunFollower,
    cancel,
    check_model,
    error_text,
    launch,
    launch_state,
    launches,
    launches_table,
    round_table,
    run_state_status,
    running_bundles,
    shard_table,
)
from workbench.viz import plots

__all__ = ["CSS", "RunLauncher", "quickstart_population"]

CSS = {
    "run": "wb-launcher-run",
    "cancel": "wb-launcher-cancel",
    "check": "wb-launcher-check",
    "message": "wb-launcher-message",
    "check_message": "wb-launcher-check-message",
    "status": "wb-launcher-status",
    "error": "wb-launcher-error",
    "shards": "wb-launcher-shards",
    "rounds": "wb-launcher-rounds",
    "launches": "wb-launcher-launches",
    "result": "wb-launcher-result",
}
"""The stable CSS classes of the page's key parts (for browser tests and styling)."""

MODEL_KINDS = ("embedded", "openai", "replay", "vllm")
LIVE = ("starting", "running")
RECENT_EVERY_S = 5.0
"""How often the periodic refresh reads the recent launches (progress is read every tick)."""


@cache
def quickstart_population() -> PopulationSpec:
    """The quickstart example's population (the paper's education population)."""
    population = load_run_config(example_path("quickstart")).population
    assert isinstance(population, PopulationSpec)
    return population


def _urls(text: str) -> list[str]:
    """Endpoint URLs from text separated by commas, spaces or new lines."""
    return [u for u in re.split(r"[\s,]+", text.strip()) if u]


class RunLauncher(pn.viewable.Viewer):
    """Game, policy, model and backend settings; Run, Cancel, and the run's live progress.

    `run()` (or `await arun()`, what the Run button does) starts a run; `refresh()` reads its
    progress from disk (a periodic callback does it when served); `cancel_run()` interrupts it.
    Errors never raise into the page: they land in `message` (settings, launch) or `error`
    (the run's own failure).
    """

    # ---- where runs go ----------------------------------------------------------------------
    results_dir = param.String(
        "results", doc="the results folder: bundles go here, launch records in its .launches/"
    )
    ray_address = param.String(
        None,
        allow_None=True,
        doc="Ray cluster address for backend ray (backend.address); None: the run's process "
        "starts a local Ray cluster",
    )

    # ---- who plays -------------------------------------------------------------------------
    population = param.ClassSelector(
        class_=PopulationSpec,
        default=None,
        allow_None=True,
        allow_refs=True,
        doc="the population (bind it to PopulationEditor.param.spec); None: the quickstart "
        "example's education population",
    )
    run_name = param.String(
        "dashboard", label="Run name", doc="the run's name: it starts the bundle's folder name"
    )
    n_agents = param.Integer(
        50, bounds=(1, MAX_AGENTS), allow_refs=True, label="Agents", doc="agents in the game"
    )
    seed = param.Integer(
        42, bounds=(0, None), allow_refs=True, label="Seed", doc="the run's seed (personas too)"
    )

    # ---- the game (GameSpec, PromptSpec) ------------------------------------------------------
    ratio = param.Number(2 / 3, bounds=(0, 1), label="Ratio p", doc="game.ratio, in (0, 1]")
    offset = param.Number(0.0, label="Offset", doc="game.offset: target = offset + p * mean")
    low = param.Number(0.0, label="Lowest guess", doc="game.low, inclusive")
    high = param.Number(100.0, label="Highest guess", doc="game.high, inclusive, > low")
    rounds = param.Integer(2, bounds=(1, 1000), label="Rounds", doc="game.rounds, 1-1000")
    prompt_style = param.Selector(
        default="direct",
        objects=["direct", "step_by_step"],
        label="Prompt",
        doc="game.prompt.style: direct (the paper's prompt 1) or step_by_step (prompts 2-4)",
    )
    rational_note = param.Boolean(
        False, label="All players are rational", doc="game.prompt.rational_note (prompt 3)"
    )
    strategy_note = param.Boolean(
        False, label="Players guess strategies", doc="game.prompt.strategy_note (prompt 4)"
    )
    famous_game_note = param.Boolean(
        False, label="Famous game note", doc="game.prompt.famous_game_note"
    )
    persona = param.Boolean(True, label="Persona in prompt", doc="game.prompt.persona")
    population_note = param.Boolean(
        False, label="Population note", doc="game.prompt.population_note"
    )

    # ---- the policy -----------------------------------------------------------------------
    policy = param.Selector(
        default="llm", objects=list(POLICY_KINDS), label="Policy", doc="policy.kind"
    )
    extract_number = param.Selector(
        default="never",
        objects=list(EXTRACT_NUMBER_CHOICES),
        label="Extract number",
        doc="policy.extract_number (llm): the paper's second call",
    )
    level_k_tau = param.Number(
        None,
        allow_None=True,
        bounds=(0, 20),
        label="tau",
        doc="policy.tau (level_k): Poisson depths; None: the default depth shares",
    )
    random_latency_s = param.Number(
        0.0, bounds=(0, 3600), label="Latency (s)", doc="policy.latency_s (random)"
    )

    # ---- the model (ModelSpec) --------------------------------------------------------------
    model_kind = param.Selector(
        default="embedded", objects=list(MODEL_KINDS), label="Model", doc="model.kind"
    )
    base_urls = param.String(
        "",
        label="Endpoint URL(s)",
        doc="model.base_urls (openai), separated by commas or spaces: http://host:8000/v1",
    )
    model_name = param.String(
        "", label="Model name", doc="model.name: what the server serves (openai), or loads (vllm)"
    )
    api_key_env = param.String(
        "", label="API key variable", doc="model.api_key_env (openai); the key is never stored"
    )
    replay_bundle = param.String("", label="Replay bundle", doc="model.bundle (replay)")
    temperature = param.Number(0.7, bounds=(0, 2), label="Temperature", doc="model.temperature")
    max_tokens = param.Integer(4, bounds=(1, 4096), label="Max tokens", doc="model.max_tokens")
    n_threads = param.Integer(
        None, allow_None=True, bounds=(1, None), label="Threads", doc="model.n_threads (embedded)"
    )

    # ---- the backend ------------------------------------------------------------------------
    backend = param.Selector(
        default="local", objects=["local", "ray"], label="Backend", doc="backend.kind"
    )
    agents_per_actor = param.Integer(
        None,
        allow_None=True,
        bounds=(1, None),
        label="Agents per actor",
        doc="backend.agents_per_actor (a shard's size); None: the backend's default",
    )

    # ---- the page ---------------------------------------------------------------------------
    plot_by = param.String(
        "education", doc="persona column the finished run's guesses are drawn by"
    )
    refresh_s = param.Number(
        1.0, bounds=(0.1, 60), doc="seconds between progress refreshes when served"
    )
    recent_limit = param.Integer(10, bounds=(1, 200), doc="launches listed in the recent table")
    on_finished = param.Callable(
        None,
        allow_None=True,
        doc="called with the bundle path when the followed run completes",
    )

    # ---- outputs ----------------------------------------------------------------------------
    message = param.String(
        "", doc="output: why nothing started (a ConfigError or model error), or what happened"
    )
    message_failed = param.Boolean(False, doc="output: message is an error")
    check_message = param.String("", doc="output: the Check button's verdict")
    check_failed = param.Boolean(False, doc="output: check_message is an error")
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
        default=pd.DataFrame(columns=[*ROUND_COLUMNS, "note"]),
        doc="output: the followed run's finished rounds (from its RoundFinished events)",
    )
    recent = param.DataFrame(
        default=pd.DataFrame(columns=list(LAUNCH_COLUMNS)),
        doc="output: recent launches, newest first, with status and error",
    )
    finished_bundle = param.String(
        None, allow_None=True, doc="output: the bundle of the followed run once it completed"
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._launch: Launch | None = None
        self._follower: RunFollower | None = None
        self._listed_at = -math.inf
        self._callbacks: set[int] = set()
        self._reattach()

    # ---- settings -> config -----------------------------------------------------------------

    def config(self) -> RunConfig:
        """The RunConfig the settings describe; ConfigError (the CLI's message) otherwise."""
        population = self.population if self.population is not None else quickstart_population()
        policy: dict[str, Any] = {"kind": self.policy}
        if self.policy == "llm":
            policy["extract_number"] = self.extract_number
        elif self.policy == "level_k" and self.level_k_tau is not None:
            policy["tau"] = self.level_k_tau
        elif self.policy == "random":
            policy["latency_s"] = self.random_latency_s
        backend: dict[str, Any] = {"kind": self.backend}
        if self.agents_per_actor is not None:
            backend["agents_per_actor"] = self.agents_per_actor
        if self.backend == "ray" and self.ray_address:
            backend["address"] = self.ray_address
        data: dict[str, Any] = {
            "name": self.run_name,
            "seed": self.seed,
            "n_agents": self.n_agents,
            "population": population.model_dump(mode="json"),
            "game": {
                "ratio": self.ratio,
                "offset": self.offset,
                "low": self.low,
                "high": self.high,
                "rounds": self.rounds,
                "prompt": {
                    "style": self.prompt_style,
                    "rational_note": self.rational_note,
                    "strategy_note": self.strategy_note,
                    "famous_game_note": self.famous_game_note,
                    "persona": self.persona,
                    "population_note": self.population_note,
                },
            },
            "policy": policy,
            "backend": backend,
        }
        if self.policy == "llm":
            data["model"] = self._model_data()
        return validate(RunConfig, data, "run config")

    def _model_data(self) -> dict[str, Any]:
        model: dict[str, Any] = {
            "kind": self.model_kind,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.model_kind == "openai":
            model["base_urls"] = _urls(self.base_urls)
            model["name"] = self.model_name or None
            model["api_key_env"] = self.api_key_env or None
        elif self.model_kind == "vllm":
            model["name"] = self.model_name or None
        elif self.model_kind == "replay":
            model["bundle"] = self.replay_bundle or None
        elif self.n_threads is not None:
            model["n_threads"] = self.n_threads
        return model

    # ---- actions ----------------------------------------------------------------------------

    def _say(self, text: str, failed: bool) -> None:
        with param.parameterized.batch_call_watchers(self):
            self.message, self.message_failed = text, failed

    def _config_or_message(self) -> RunConfig | None:
        try:
            return self.config()
        except WorkbenchError as exc:
            self._say(error_text(exc), True)
            return None

    def _started(self, result: Launch | BaseException) -> Launch | None:
        if isinstance(result, BaseException):
            self._say(error_text(result), True)
            return None
        self._say(f"started {result.launch_id} (pid {result.pid})", False)
        self.attach(result)
        return result

    def run(self) -> Launch | None:
        """Validate, check the model and start the run (blocking: for notebooks and tests);
        the launch, or None with the reason in `message`."""
        config = self._config_or_message()
        if config is None or self.busy:
            return None
        self.busy = True
        try:
            result: Launch | BaseException = launch(config, self.results_dir)
        except WorkbenchError as exc:
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
            result: Launch | BaseException = await asyncio.to_thread(
                launch, config, self.results_dir
            )
        except WorkbenchError as exc:
            result = exc
        finally:
            self.busy = False
        return self._started(result)

    def check(self) -> bool:
        """Check the model as a run would (blocking); the verdict in `check_message`."""
        config = self._config_or_message()
        if config is None:
            return False
        return self._checked(_check(config))

    async def acheck(self) -> bool:
        """`check()` in a thread: the page stays live while an endpoint is asked."""
        config = self._config_or_message()
        if config is None:
            return False
        self.busy = True
        try:
            verdict = await asyncio.to_thread(_check, config)
        finally:
            self.busy = False
        return self._checked(verdict)

    def _checked(self, verdict: tuple[bool, str]) -> bool:
        ok, text = verdict
        with param.parameterized.batch_call_watchers(self):
            self.check_message, self.check_failed = text, not ok
        return ok

    def cancel_run(self) -> bool:
        """Interrupt the followed run (SIGINT to its writer; it marks the bundle cancelled)."""
        target: Launch | Path | None = self._launch
        if target is None and self.bundle:
            target = Path(self.bundle)
        if target is None:
            self._say("no run to cancel", True)
            return False
        try:
            pid = cancel(target)
        except WorkbenchError as exc:
            self._say(error_text(exc), True)
            return False
        self._say(f"cancel sent to the run (pid {pid}); it marks its bundle cancelled", False)
        return True

    # ---- following --------------------------------------------------------------------------

    def attach(self, target: Launch | str | Path) -> None:
        """Follow a launch, or a bundle (its run started anywhere); then `refresh()`."""
        self._launch, self._follower = None, None
        if isinstance(target, Launch):
            self._launch = target
            if target.bundle is not None:
                self._follower = RunFollower(Path(target.bundle))
        else:
            self._follower = RunFollower(Path(target))
        with param.parameterized.batch_call_watchers(self):
            self.finished_bundle = None
            self.launch_id = self._launch.launch_id if self._launch else None
            self.bundle = str(self._follower.bundle) if self._follower else None
            self.status, self.error, self.rounds_done = "starting", "", 0
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
        self._show(None)
        self._list_recent()

    def _current(self) -> LaunchState | None:
        """The followed run's state now (the bundle's new events only, once it has one)."""
        if self._follower is None and self._launch is not None:
            state = launch_state(self._launch)
            if state.bundle is None:
                return state
            self._follower = RunFollower(state.bundle)
        if self._follower is None:
            return None
        run: RunState = self._follower.poll()
        state = run_state_status(run, self._follower.bundle, self._launch)
        if state.status == "starting" and self._launch is not None:
            from_launch = launch_state(self._launch)  # exited before its first event?
            if from_launch.finished:
                return from_launch
        return state

    def refresh(self, *, recent: bool = True) -> None:
        """Read the followed run's progress (its new events only) and, with `recent`, the
        recent launches from disk."""
        was = self.status
        self._show(self._current())
        if recent or self.status != was:
            self._list_recent()

    def _tick(self) -> None:
        """The periodic refresh: progress every tick, the recent list every RECENT_EVERY_S."""
        self.refresh(recent=time.monotonic() - self._listed_at > RECENT_EVERY_S)

    def _list_recent(self) -> None:
        self.recent = launches_table(launches(self.results_dir, self.recent_limit))
        self._listed_at = time.monotonic()

    def _show(self, state: LaunchState | None) -> None:
        was = self.status
        with param.parameterized.batch_call_watchers(self):
            if state is None:
                self.status, self.error, self.rounds_done, self.rounds_total = "", "", 0, 0
                self.shards = shard_table(None)
                self.round_stats = round_table(None)
                return
            self.status = state.status
            self.error = state.error or ""
            self.rounds_done, self.rounds_total = state.rounds_done, state.rounds
            self.bundle = str(state.bundle) if state.bundle is not None else None
            self.shards = shard_table(state.run)
            self.round_stats = round_table(state.run)
        if state.status == "complete" and was != "complete" and state.bundle is not None:
            self.finished_bundle = str(state.bundle)
            if self.on_finished is not None:
                self.on_finished(str(state.bundle))

    # ---- the page ---------------------------------------------------------------------------

    def __panel__(self) -> pn.viewable.Viewable:
        """Settings, Run / Check / Cancel, messages, status, shard and round tables, result."""
        run = pn.widgets.Button(
            label="Run", color="primary", disabled=self.param.busy, css_classes=[CSS["run"]]
        )
        run.on_click(self._on_run)
        check = pn.widgets.Button(
            label="Check", variant="outline", disabled=self.param.busy, css_classes=[CSS["check"]]
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
        table = {"disabled": True, "show_index": False, "pagination": "remote", "page_size": 20}
        return pn.Column(
            self._settings(),
            pn.Row(
                run, cancel_button, pn.indicators.LoadingSpinner(value=self.param.busy, size=24)
            ),
            pn.bind(_alert, self.param.message, self.param.message_failed, CSS["message"]),
            pn.pane.Markdown(
                pn.bind(
                    self._status_line,
                    self.param.status,
                    self.param.rounds_done,
                    self.param.rounds_total,
                    self.param.bundle,
                ),
                css_classes=[CSS["status"]],
            ),
            pn.bind(_error_alert, self.param.error, self.param.status),
            pn.pane.Markdown("### Shards"),
            pn.widgets.Tabulator.from_param(
                self.param.shards, css_classes=[CSS["shards"]], **table
            ),
            pn.pane.Markdown("### Rounds"),
            pn.widgets.Tabulator.from_param(
                self.param.round_stats, css_classes=[CSS["rounds"]], **table
            ),
            pn.bind(self._result_view, self.param.finished_bundle, self.param.plot_by),
            pn.pane.Markdown("### Recent launches"),
            pn.widgets.Tabulator.from_param(
                self.param.recent, css_classes=[CSS["launches"]], **table
            ),
            pn.Row(
                check,
                pn.bind(
                    _alert, self.param.check_message, self.param.check_failed, CSS["check_message"]
                ),
            ),
        )

    def _settings(self) -> pn.viewable.Viewable:
        w = pn.widgets
        game = pn.Column(
            pn.pane.Markdown("**Game**"),
            w.TextInput.from_param(self.param.run_name),
            w.IntInput.from_param(self.param.n_agents),
            w.IntInput.from_param(self.param.seed),
            w.FloatInput.from_param(self.param.ratio, step=0.01),
            w.FloatInput.from_param(self.param.offset),
            w.FloatInput.from_param(self.param.low),
            w.FloatInput.from_param(self.param.high),
            w.IntInput.from_param(self.param.rounds),
        )
        prompt = pn.Column(
            pn.pane.Markdown("**Prompt**"),
            w.Select.from_param(self.param.prompt_style),
            w.Checkbox.from_param(self.param.rational_note),
            w.Checkbox.from_param(self.param.strategy_note),
            w.Checkbox.from_param(self.param.famous_game_note),
            w.Checkbox.from_param(self.param.persona),
            w.Checkbox.from_param(self.param.population_note),
        )
        policy = pn.Column(
            pn.pane.Markdown("**Policy**"),
            w.Select.from_param(self.param.policy),
            w.Select.from_param(self.param.extract_number),
            w.FloatInput.from_param(self.param.level_k_tau),
            w.FloatInput.from_param(self.param.random_latency_s),
        )
        model = pn.Column(
            pn.pane.Markdown("**Model**"),
            w.Select.from_param(self.param.model_kind),
            w.TextInput.from_param(self.param.base_urls),
            w.TextInput.from_param(self.param.model_name),
            w.TextInput.from_param(self.param.api_key_env),
            w.TextInput.from_param(self.param.replay_bundle),
            w.FloatInput.from_param(self.param.temperature, step=0.1),
            w.IntInput.from_param(self.param.max_tokens),
            w.IntInput.from_param(self.param.n_threads),
        )
        backend = pn.Column(
            pn.pane.Markdown("**Backend**"),
            w.Select.from_param(self.param.backend),
            w.IntInput.from_param(self.param.agents_per_actor),
        )
        return pn.FlexBox(game, prompt, policy, model, backend)

    async def _on_run(self, _: Any) -> None:
        await self.arun()

    async def _on_check(self, _: Any) -> None:
        await self.acheck()

    @staticmethod
    def _status_line(status: str, done: int, total: int, bundle: str | None) -> str:
        if not status:
            return "no run followed"
        where = f" · bundle `{bundle}`" if bundle else ""
        return f"**{status}** · rounds {done} / {total}{where}"

    def _result_view(self, bundle: str | None, by: str) -> pn.viewable.Viewable:
        """The completed run's histogram and its guesses by `by` (when a persona column)."""
        if not bundle:
            return pn.Column(visible=False)
        try:
            parts: list[Any] = [pn.pane.HoloViews(plots.histogram(bundle))]
            if by:
                parts.append(pn.pane.HoloViews(plots.distribution(bundle, by)))
        except WorkbenchError as exc:
            return _alert(error_text(exc), True, CSS["result"])
        return pn.Column(pn.pane.Markdown("### Result"), *parts, css_classes=[CSS["result"]])


def _check(config: RunConfig) -> tuple[bool, str]:
    """(ok, what was checked or why it failed) for a config's model."""
    try:
        return True, check_model(config)
    except WorkbenchError as exc:
        return False, error_text(exc)


def _alert(text: str, failed: bool, css: str) -> pn.viewable.Viewable:
    return pn.pane.Alert(
        text or "-",
        alert_type="danger" if failed else "info",
        visible=bool(text),
        css_classes=[css],
    )


def _error_alert(error: str, status: str) -> pn.viewable.Viewable:
    shown = bool(error) and status in ("failed", "cancelled")
    return pn.pane.Alert(
        f"{status}: {error}" if shown else "-",
        alert_type="danger" if status == "failed" else "warning",
        visible=shown,
        css_classes=[CSS["error"]],
    )
