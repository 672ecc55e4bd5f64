"""The IPython extension: `%load_ext workbench` registers the `%%workbench_run` cell magic;
and `notebook_setup()`, which a notebook calls before its first interactive plot.

`%%workbench_run [--out DIR] [--var NAME]` reads the cell as a YAML run config (the
workbench's own safe loader: the same one-line `ConfigError`s as `workbench run`), plays it
with progress bars fed by the run's events (rounds, and agents answered in the round), and
shows the finished bundle: its small HTML view, and a `viz.plots` histogram when HoloViews
is loaded with a plotting extension (`notebook_setup()`). A bad config shows its error
line and starts nothing; interrupting the kernel cancels the run (its bundle is marked
cancelled and can be resumed). The specs and bundles' `_repr_html_` live in their own layers
(`workbench.config`, `workbench.results.html`); this module only wires them into IPython.

Notebooks draw offline: `notebook_setup()` (and `%workbench`) load HoloViews' bokeh backend
and Panel with their JavaScript and stylesheets inlined in the notebook, never fetched from
cdn.bokeh.org or cdn.holoviz.org. Always, not only when a CDN cannot be reached: it is the
browser that fetches them, and the kernel cannot tell whether the browser reaches a CDN (a
laptop online in front of an air-gapped cluster's kernel, or the other way round); a notebook
saved with its outputs then draws anywhere. The price is about 6 MB in the notebook's first
output cell. One gap remains: parts of the inline app that it restyles later still ask the CDN
for a few Panel stylesheets (Panel sends their URLs before its preprocessing inlines them);
offline they work and draw, only that styling is missing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from workbench._files import RESULTS_DEFAULT, results_dir
from workbench.errors import WorkbenchError, one_line

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from workbench.results import Bundle
    from workbench.runtime import Simulation
    from workbench.runtime.events import Event

CELL_SOURCE = "%%workbench_run cell"
"""How error messages name the cell (like a file name in `workbench run`'s)."""

MAGICS = {"cell": ("workbench_run",), "line": ("workbench",)}
"""The magics this extension registers, by kind."""


def show_error(exc: BaseException) -> None:
    """Display an error as its one line (`ConfigError: ...`), never a traceback."""
    line = one_line(exc)
    shown = f'<pre style="color:#b22222;white-space:pre-wrap">{html.escape(line)}</pre>'
    display({"text/plain": line, "text/html": shown}, raw=True)


class AgentsBar:
    """A tqdm bar over the agents that answered in the current round, fed by ShardProgress
    events (the run's round bar counts rounds); reset when a round finishes."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.answered: dict[int, int] = {}

    def __call__(self, event: Event) -> None:
        from workbench.runtime.events import RoundFinished, RunFinished, RunStarted, ShardProgress

        if isinstance(event, RunStarted):
            from tqdm.auto import tqdm

            self.bar = tqdm(total=event.n_agents, desc="agents", unit="agent", leave=False)
        elif self.bar is None:
            return
        elif isinstance(event, ShardProgress):
            self.answered[event.shard] = event.answered
            self.bar.n = sum(self.answered.values())
            self.bar.set_description(f"round {event.round}: agents")
            self.bar.refresh()
        elif isinstance(event, RoundFinished):
            self.answered.clear()
            self.bar.reset()
        elif isinstance(event, RunFinished):
            self.close()

    def close(self) -> None:
        """Close the bar (idempotent)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def play(sim: Simulation, out: str | Path | None) -> Bundle:
    """Run `sim` on a helper thread with progress; a KeyboardInterrupt (the kernel's stop
    button) cancels it and waits for its bundle, marked cancelled."""
    bar = AgentsBar()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-run")
    try:
        future = pool.submit(asyncio.run, sim.arun(out_dir=out, progress=True, on_event=bar))
        while True:
            try:
                return future.result()
            except KeyboardInterrupt:
                sim.cancel()
    finally:
        pool.shutdown(wait=True)
        bar.close()


def inline_stylesheets(viewable: Any, root: Any) -> None:
    """A Panel preprocessing hook: with `pn.config.inline`, every stylesheet of a drawn model
    that points at Panel's CDN is inlined from Panel's own files. Panel does this for objects
    it displays itself, but not for a HoloViews object's own display (a plot as a cell's
    result), whose theme stylesheets would come from cdn.holoviz.org."""
    import panel as pn

    if not pn.config.inline:
        return
    from bokeh.models import UIElement
    from panel.io.notebook import patch_inline_stylesheets

    for model in root.select({"type": UIElement}):
        patch_inline_stylesheets(model)


def notebook_setup(*extensions: str) -> None:
    """Load HoloViews' bokeh plotting and Panel's notebook extension (with Panel's named
    `extensions`, e.g. "tabulator"), their JavaScript and stylesheets inlined: no CDN, so
    plots draw offline. Call it before the first interactive plot; again with more
    extensions when needed (what is loaded is not sent twice). Served (`panel serve`), the
    page carries its resources as well."""
    import holoviews as hv
    import panel as pn
    from panel.viewable import Viewable

    if inline_stylesheets not in Viewable._preprocessing_hooks:
        Viewable._preprocessing_hooks.append(inline_stylesheets)
    if not getattr(hv.extension, "_loaded", False):
        hv.extension("bokeh", inline=True)
    pn.extension(*extensions, inline=True)


def holoviews_ready() -> bool:
    """Whether HoloViews is imported and a plotting extension is loaded (so a plot shows)."""
    hv = sys.modules.get("holoviews")
    return hv is not None and bool(getattr(hv.Store, "renderers", None))


def show_bundle(bundle: Bundle) -> None:
    """The bundle's view (with the head of its round table), the whole round table when the
    view cut it, and the last round's histogram when HoloViews can draw it."""
    from workbench.results.html import ROUND_HEAD

    display(bundle)
    if bundle.rounds_count > ROUND_HEAD:
        display(bundle.rounds())
    if holoviews_ready() and bundle.rounds_count:
        from workbench.viz import plots

        display(plots.histogram(bundle))


def run_cell(cell: str, out: str | None = None) -> Bundle | None:
    """Play the run config in `cell` and show its bundle; None (and one error line shown) when
    the config is bad or the run fails. Population paths are read relative to the current
    directory (the notebook's)."""
    from workbench.config import parse_run_config
    from workbench.runtime import Simulation

    try:
        sim = Simulation(parse_run_config(cell, CELL_SOURCE, base=Path.cwd()))
        sim.check()  # config problems that need the population, before anything is written
    except WorkbenchError as exc:
        show_error(exc)
        return None
    try:
        bundle = play(sim, out)
    except WorkbenchError as exc:
        show_error(exc)
        return None
    show_bundle(bundle)
    return bundle


@magics_class
class WorkbenchMagics(Magics):
    """The workbench's IPython magics."""

    @magic_arguments()
    @argument("--out", default=None, help="results directory (default: the config's output.dir)")
    @argument("--var", default=None, help="also store the bundle in this notebook variable")
    @cell_magic
    def workbench_run(self, line: str, cell: str) -> None:
        """Run the YAML run config in this cell with progress and show its bundle."""
        args = parse_argstring(self.workbench_run, line)
        if args.var is not None and not args.var.isidentifier():
            raise UsageError(f"--var {args.var!r}: give a Python variable name, e.g. --var bundle")
        bundle = run_cell(cell, args.out)
        if bundle is not None and args.var:
            self.shell.user_ns[args.var] = bundle

    @magic_arguments()
    @argument("--results", default=None, help=f"results directory (default: {RESULTS_DEFAULT})")
    @argument("--ray", default=None, help="a Ray cluster's address for Ray runs and the monitor")
    @argument("--tab", default=None, help="the tab shown first: Population, Run, Results, Cluster")
    @line_magic
    def workbench(self, line: str) -> Any:
        """Show the whole workbench inline (the dashboard's tabs, without its page shell)."""
        args = parse_argstring(self.workbench, line)
        return workbench_app(args.results, args.ray, args.tab)


def workbench_app(results: str | None, ray: str | None = None, tab: str | None = None) -> Any:
    """The inline app of `%workbench` over `results` (default: the workbench's results
    folder), the notebook's plotting set up first (`notebook_setup`: offline too)."""
    from workbench.ui.app import TABS, WorkbenchApp

    if tab is not None and tab not in TABS:
        raise UsageError(f"--tab {tab!r}: choose one of {', '.join(TABS)}")
    notebook_setup("tabulator")
    return WorkbenchApp(results_dir=str(results_dir(results)), ray_address=ray, tab=tab or TABS[0])


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """`%load_ext workbench`: register the magics (the reprs need no registration)."""
    ipython.register_magics(WorkbenchMagics)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """`%unload_ext workbench`: remove the magics again."""
    manager = ipython.magics_manager
    for kind, names in MAGICS.items():
        for name in names:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(WorkbenchMagics.__name__, None)
