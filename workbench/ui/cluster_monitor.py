"""ClusterMonitor (the paper's Agent-Manager): Ray's nodes, the shard actors of the runs in a
results folder, the work of their model engines round by round, the model endpoints with their
health, the workbench's named actors; cancel a running run, shut down idle actors.

Everything shown comes from `workbench.runs` (`shards`: the runs' own events; `cluster`: Ray's
public API; `endpoints`: a keyless GET of each launched run's endpoint `/models`), read in a
worker thread by `refresh()`, which a served page or a notebook calls every `refresh_s`
seconds: the page never freezes and nothing here waits on Ray inside a callback. The monitor
holds no state that matters: a restarted dashboard shows the truth from the bundles and the
cluster.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pandas as pd
import panel as pn
import param
from bokeh.models.widgets.tables import NumberFormatter

from workbench.errors import WorkbenchError
from workbench.results.engine_table import round_sums
from workbench.runs import cancelling, cluster
from workbench.runs import endpoints as endpoint_checks
from workbench.runs import shards as shard_reads
from workbench.runs.cluster import ACTOR_COLUMNS, NODE_COLUMNS
from workbench.runs.endpoints import ENDPOINT_COLUMNS
from workbench.runs.shards import ENGINE_COLUMNS, SHARD_COLUMNS
from workbench.ui.notices import notice
from workbench.ui.safe_text import TextTable, md, md_lines
from workbench.ui.workspace import inside, results_dir_param, workspace_param

__all__ = ["CSS_CLASSES", "ClusterMonitor"]

CSS_CLASSES: dict[str, str] = {
    "cluster": "wb-monitor-cluster",
    "message": "wb-monitor-message",
    "refresh": "wb-monitor-refresh",
    "nodes": "wb-monitor-nodes",
    "shards": "wb-monitor-shards",
    "engines": "wb-monitor-engines",
    "engine_summary": "wb-monitor-engine-summary",
    "run": "wb-monitor-run",
    "cancel": "wb-monitor-cancel",
    "endpoints": "wb-monitor-endpoints",
    "actors": "wb-monitor-actors",
    "shutdown": "wb-monitor-shutdown",
}
"""The css class of each part of the page (stable: the browser tests find them by these)."""

READ_ERRORS = (WorkbenchError, ConnectionError, OSError, RuntimeError)
"""What a refresh reports as its message instead of raising: the workbench's own errors and a
cluster or folder that went away meanwhile."""


NO_ENGINE_WORK = (
    "No work per model engine recorded: a Ray run's model actors report theirs each round "
    "(a local run has none)."
)
"""What the engine summary says while the runs shown recorded no engine work."""

ENGINE_FORMATS = {
    "prompt_tokens": "0,0",
    "nodes": "0,0",
    "visits": "0,0",
    "agents": "0,0",
    "seconds": "0.00",
    "share": "0.00",
}
"""How the engine table shows its numbers (thousands grouped; seconds and shares 2 decimals)."""


def _empty(columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame(columns=list(columns))


def engine_summary(engines: pd.DataFrame) -> str:
    """One line per run of `engines` (`runs.shards.engine_work` rows) about its newest round:
    the prompts walked, prompt tokens and nodes scored summed over the engines, and the largest
    engine's share of the prompts beside the ideal 1/K; NO_ENGINE_WORK when there are none.
    Plain text: the page escapes it (the run id comes from a file)."""
    lines = []
    for run_id, rows in engines.groupby("run_id", sort=False):
        newest = rows[rows["round"] == rows["round"].max()]
        sums = round_sums(newest).to_dict("records")[0]
        share = sums["largest_share"]
        said = "-" if share != share else f"{share:.2f}"
        lines.append(
            f"{run_id} round {sums['round']}: {sums['prompts']:,} prompts, "
            f"{sums['prompt_tokens']:,} prompt tokens, {sums['nodes']:,} nodes scored on "
            f"{sums['engines']} engine(s); largest share {said} (ideal {1 / sums['engines']:.2f})"
        )
    return "\n".join(lines) or NO_ENGINE_WORK


class ClusterMonitor(pn.viewable.Viewer):
    """Watch the cluster and the runs of a results folder; cancel a run; free idle actors.

    Set `results_dir` (and `ray_address` to join a cluster: the dashboard's --ray, never the
    page, which has no box for it), `await refresh()` (a served page
    does it every `refresh_s`), read `nodes`, `shards`, `endpoints`, `actors`; `await cancel()`
    stops the run chosen in `run_id`, `await shutdown_idle()` kills the idle actors.
    """

    results_dir = results_dir_param(
        "The folder whose runs are watched (their bundles' events say where their shards "
        "run and how far they are); inside `workspace` when that is set."
    )
    workspace = workspace_param()
    ray_address = param.String(
        default=None,
        allow_None=True,
        doc="The Ray cluster watched (host:port, or 'auto'): joined on the next refresh (an "
        "address that does not answer, or another cluster than the one this process is "
        "connected to, is the message). None: the cluster this process is connected to (the "
        "dashboard's --ray, or a Ray run's), if any.",
    )
    refresh_s = param.Number(
        default=2.0,
        bounds=(0.5, 3600.0),
        doc="Seconds between refreshes while the monitor is shown in a served page or notebook.",
    )
    recent = param.Integer(
        default=1,
        bounds=(0, None),
        doc="How many of the newest runs show their shards besides the running ones.",
    )
    cluster = param.String(
        default="", doc="One line about the Ray cluster watched (or how to connect to one)."
    )
    nodes = param.DataFrame(
        default=_empty(NODE_COLUMNS),
        doc="The Ray nodes: node_id, address, hostname, alive, cpus, gpus, memory_gb, "
        "object_store_gb (empty when not connected).",
    )
    shards = param.DataFrame(
        default=_empty(SHARD_COLUMNS),
        doc="The shard actors of the running and newest runs, one row per shard: node, pid, "
        "agents hosted, state, round, rounds done, answered, in flight, errors, tokens, CPU %, "
        "memory (MB), answers per second.",
    )
    engine_rounds = param.Integer(
        default=3,
        bounds=(1, None),
        doc="How many of each shown run's newest rounds the engine table shows.",
    )
    engines = param.DataFrame(
        default=_empty(ENGINE_COLUMNS),
        doc="What each model engine of the shown runs did in their newest rounds (a Ray run's "
        "model actors), one row per round and engine: node, prompts walked, prompt tokens, "
        "nodes scored, visits, agents, seconds, the node's address and the engine's share of "
        "the round's prompts.",
    )
    engine_lines = param.String(
        default=NO_ENGINE_WORK,
        doc="One line per shown run about its newest round's engines (`engine_summary`).",
    )
    endpoints = param.DataFrame(
        default=_empty(ENDPOINT_COLUMNS),
        doc="The model endpoints of the runs this folder launched, running now, with their health "
        "(ok, needs key, unreachable, error, in-process: checked with no API key) and why.",
    )
    actors = param.DataFrame(
        default=_empty(ACTOR_COLUMNS),
        doc="The workbench's named Ray actors, their run's status and whether they are idle "
        "(their run has ended).",
    )
    run_id = param.Selector(
        default=None,
        objects=[],
        allow_None=True,
        doc="The running run that Cancel stops (the running runs of results_dir).",
    )
    message = param.String(
        default="", doc="What the last action did, or why the last refresh could not read."
    )
    message_kind = param.Selector(
        default="info",
        objects=["info", "success", "warning", "danger"],
        doc="How the message is shown: info, success (done), warning (nothing done), danger.",
    )
    refreshing = param.Boolean(default=False, doc="Whether a refresh is reading now.")

    def __init__(self, **params: Any) -> None:
        self._joined: str | None = None  # the ray_address a refresh last tried to join
        self._running: dict[str, str] = {}  # run id -> bundle path, of the running runs
        self._periodic: Any = None
        super().__init__(**params)

    # ------------------------------------------------------------------ state

    def read(self) -> dict[str, Any]:
        """Everything the monitor shows, read now (blocking: Ray, disk, HTTP); the param
        values `refresh()` sets. Joins `ray_address` first when it is new (its error, e.g. an
        address that does not answer, becomes the message)."""
        values: dict[str, Any] = {}
        if self.ray_address and self.ray_address != self._joined:
            self._joined = self.ray_address  # once per address, not on every refresh
            try:
                cluster.connect(self.ray_address)
            except WorkbenchError as exc:
                values.update(message=str(exc), message_kind="danger")
        root = self._root()
        running = shard_reads.running_runs(root)
        engines = shard_reads.engine_work(root, recent=self.recent, rounds=self.engine_rounds)
        values.update(
            cluster=cluster.cluster_summary(),
            nodes=cluster.nodes(),
            shards=shard_reads.shard_actors(root, recent=self.recent),
            engines=engines,
            engine_lines=engine_summary(engines),
            endpoints=endpoint_checks.endpoints(root),
            actors=cluster.named_actors(root),
            running=dict(zip(running["run_id"], running["path"], strict=True)),
        )
        return values

    def _root(self) -> Path:
        """results_dir, checked to be inside the workspace (ConfigError when not)."""
        return inside(self.workspace, self.results_dir, "results folder")

    async def refresh(self) -> None:
        """Read everything again in a worker thread and show it; a refresh already under way
        is not doubled. A folder or cluster that cannot be read becomes the message."""
        if self.refreshing:
            return
        self.refreshing = True
        try:
            values = await asyncio.to_thread(self.read)
        except READ_ERRORS as exc:
            self.param.update(message=f"cannot refresh: {exc}", message_kind="danger")
            return
        finally:
            self.refreshing = False
        self._running = values.pop("running")
        ids = list(self._running)
        self.param.run_id.objects = ids
        chosen = self.run_id if self.run_id in ids else (ids[-1] if ids else None)
        self.param.update(run_id=chosen, **values)

    @param.depends("results_dir", "ray_address", watch=True)
    def _source_changed(self) -> None:
        """Another folder or cluster: the old message no longer applies."""
        self.param.update(message="", message_kind="info")

    async def cancel(self) -> str:
        """Cancel the run chosen in `run_id` (`runs.cancelling.cancel_run`: SIGINT to its
        process once it is proven to be a launch's own run); the message says what was done."""
        if self.run_id is None or self.run_id not in self._running:
            self.param.update(message="no running run to cancel", message_kind="info")
            return self.message
        path = Path(self._running[self.run_id])
        try:
            said = await asyncio.to_thread(cancelling.cancel_run, path)
        except WorkbenchError as exc:
            said = str(exc)
        sent = "sent SIGINT" in said
        self.param.update(message=said, message_kind="success" if sent else "warning")
        await self.refresh()
        return self.message

    async def shutdown_idle(self) -> list[str]:
        """Kill the workbench's idle named actors (their run has ended); returns their names
        and says what was done in the message."""
        try:
            killed = await asyncio.to_thread(cluster.shutdown_idle, self._root())
        except READ_ERRORS as exc:
            self.param.update(message=f"cannot shut down idle actors: {exc}", message_kind="danger")
            return []
        await self.refresh()
        self.param.update(
            message=f"shut down {len(killed)} idle actor(s): {', '.join(killed)}"
            if killed
            else "no idle actors to shut down",
            message_kind="success" if killed else "info",
        )
        return killed

    # ------------------------------------------------------------------ the page

    @param.depends("refresh_s", watch=True)
    def _period_changed(self) -> None:
        if self._periodic is not None:
            self._periodic.period = int(1000 * self.refresh_s)

    def _start_refreshing(self) -> None:
        """Refresh now and every `refresh_s` while shown in a served page or a notebook."""
        if pn.state.curdoc is None:
            return
        if self._periodic is None:
            self._periodic = pn.state.add_periodic_callback(
                self.refresh, period=int(1000 * self.refresh_s)
            )
        pn.state.execute(self.refresh)

    def __panel__(self) -> pn.viewable.Viewable:
        def table(frame: param.DataFrame, css: str, **options: Any) -> pn.widgets.Tabulator:
            return TextTable(
                frame,
                pagination="remote",
                page_size=options.pop("page_size", 10),
                disabled=True,
                show_index=False,
                sizing_mode="stretch_width",
                css_classes=[CSS_CLASSES[css]],
                **options,
            )

        refresh = pn.widgets.Button(
            label="Refresh",
            variant="outline",
            disabled=self.param.refreshing,
            css_classes=[CSS_CLASSES["refresh"]],
        )
        refresh.on_click(self._on_refresh)
        cancel = pn.widgets.Button(
            label="Cancel run",
            color="danger",
            disabled=pn.bind(lambda run_id: run_id is None, self.param.run_id),
            css_classes=[CSS_CLASSES["cancel"]],
        )
        cancel.on_click(self._on_cancel)
        shutdown = pn.widgets.Button(
            label="Shut down idle actors",
            color="warning",
            disabled=pn.bind(_no_idle, self.param.actors),
            css_classes=[CSS_CLASSES["shutdown"]],
        )
        shutdown.on_click(self._on_shutdown)
        message = pn.bind(
            lambda text, kind: notice(md(text), kind, CSS_CLASSES["message"], margin=(5, 10)),
            self.param.message,
            self.param.message_kind,
        )
        layout = pn.Column(
            pn.Row(
                pn.widgets.TextInput.from_param(self.param.results_dir, label="Results folder"),
                refresh,
            ),
            pn.pane.Markdown(pn.bind(md, self.param.cluster), css_classes=[CSS_CLASSES["cluster"]]),
            message,
            pn.pane.Markdown("### Nodes"),
            table(self.param.nodes, "nodes"),
            pn.pane.Markdown("### Shard actors"),
            table(self.param.shards, "shards", page_size=20, hidden_columns=["backend"]),
            pn.Row(
                pn.widgets.Select.from_param(
                    self.param.run_id, label="Running run", css_classes=[CSS_CLASSES["run"]]
                ),
                cancel,
            ),
            pn.pane.Markdown("### Model engines"),
            pn.pane.Markdown(
                pn.bind(md_lines, self.param.engine_lines),
                css_classes=[CSS_CLASSES["engine_summary"]],
            ),
            table(
                self.param.engines,
                "engines",
                page_size=20,
                formatters={
                    c: NumberFormatter(format=f, text_align="right")
                    for c, f in ENGINE_FORMATS.items()
                },
            ),
            pn.pane.Markdown("### Models and endpoints"),
            table(self.param.endpoints, "endpoints"),
            pn.pane.Markdown("### Named actors"),
            table(self.param.actors, "actors"),
            shutdown,
            sizing_mode="stretch_width",
        )
        self._start_refreshing()
        return layout

    async def _on_refresh(self, _event: Any) -> None:
        await self.refresh()

    async def _on_cancel(self, _event: Any) -> None:
        await self.cancel()

    async def _on_shutdown(self, _event: Any) -> None:
        await self.shutdown_idle()


def _no_idle(actors: pd.DataFrame) -> bool:
    """Whether no listed actor is idle (the shut-down button is then disabled)."""
    return actors.empty or not bool(actors["idle"].astype(bool).any())
