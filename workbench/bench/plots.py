"""Plots at a million agents: the distribution-by-education plot from a bundle, timed step by
step, against the naive ways measured in the same run.

The bundle is a two-round level-k run over the paper's education population (groups reason to
different depths), built once into a folder and reused by later runs. Timed: reading the round,
the viz tables (`group_summary`, `guess_counts`), building `plots.distribution` of each kind
and rendering it to a bokeh model; the per-agent view rasterized by datashader. Baselines:
pandas merge + groupby().describe() over the same raw columns, and HoloViews' BoxWhisker over
raw values (on a sample, scaled linearly to n when the sample is smaller). "browser KiB" is the
size of the rendered bokeh model as JSON: what a notebook sends to the browser.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TARGET_SECONDS = 2.0
"""The issue's goal: the distribution-by-education plot of a 1M-agent bundle under 2 s."""

NAME = "bench-plots"
POLICY: dict[str, Any] = {
    "kind": "level_k",
    "noise_sd": 4.0,
    "attribute": "education",
    "by_attribute": {
        "elementary school": {0: 0.4, 1: 0.4, 2: 0.2},
        "master's degree": {0: 0.1, 1: 0.4, 2: 0.4, 3: 0.1},
        "doctoral degree": {0: 0.1, 1: 0.3, 2: 0.4, 3: 0.2},
    },
}
"""A cheap behavioural policy whose education groups differ (deeper reasoning, lower guesses)."""


def default_folder() -> Path:
    """Where the benchmark's bundles are built and reused: a folder in the system temp dir."""
    return Path(tempfile.gettempdir()) / "workbench-bench-plots"


def bench_bundle(n: int, seed: int, folder: Path, by: str) -> tuple[Any, float | None]:
    """(bundle, seconds to build it): a complete bundle of this benchmark's config under
    `folder`, reused when there is one (seconds None), else run now. ConfigError first when
    `by` is not a column of the population."""
    from workbench._examples import examples_dir
    from workbench.config import RunConfig, load_population_spec
    from workbench.errors import BundleError, ConfigError
    from workbench.results import Bundle
    from workbench.runtime import Simulation

    spec = load_population_spec(examples_dir() / "personas" / "paper-education.yaml")
    columns = [d.name for d in spec.dimensions]
    if by not in columns:
        raise ConfigError(f"--by: {by!r} is not a column of the population; choose from {columns}")
    config = RunConfig(
        name=NAME,
        seed=seed,
        n_agents=n,
        population=spec,
        game={"rounds": 2},
        policy=POLICY,
        backend={"kind": "local", "agents_per_shard": min(250_000, max(n, 1))},
    )
    wanted = config.model_dump(mode="json")
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        try:
            bundle = Bundle.open(path)
            if bundle.is_complete and bundle.config.model_dump(mode="json") == wanted:
                return bundle, None
        except BundleError:
            continue
    start = time.perf_counter()
    bundle = Simulation(config).run(out_dir=folder, progress=False)
    return bundle, time.perf_counter() - start


def _timed(step: Callable[[], Any], repeats: int) -> tuple[Any, float, float]:
    """(result, first seconds, best seconds) of `step` run `repeats` times."""
    times, result = [], None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - start)
    return result, times[0], min(times)


def _browser_kib(model: Any) -> float:
    """Size of a rendered bokeh model as the JSON document a notebook sends, in KiB."""
    from bokeh.document import Document

    document = model.document
    if document is None:
        document = Document()
        document.add_root(model)
    return len(json.dumps(document.to_json(deferred=False))) / 1024


def plots_bench(
    n: int = 1_000_000,
    by: str = "education",
    seed: int = 0,
    folder: Path | None = None,
    repeats: int = 3,
    baseline_sample: int = 100_000,
) -> str:
    """The benchmark's table: each step's first and best seconds, browser KiB, the ratios to
    the naive baselines and whether the distribution plot met TARGET_SECONDS."""
    folder = Path(folder) if folder is not None else default_folder()
    bundle, built = bench_bundle(n, seed, folder, by)
    start = time.perf_counter()
    import holoviews as hv

    from workbench.viz import agents_view, plots
    from workbench.viz.distributions import group_summary, guess_counts

    imported = time.perf_counter() - start
    rows: list[tuple[str, float, float, float | None]] = []

    def measure(name: str, step: Callable[[], Any], times: int = repeats) -> tuple[Any, float]:
        result, first, best = _timed(step, times)
        rows.append((name, first, best, None))
        return result, best

    def read() -> int:
        return bundle.responses_table(2).num_rows + len(bundle.personas())

    measure("read round 2 (responses + personas)", read)
    _, summary_s = measure(f"group_summary(by={by})", lambda: group_summary(bundle, by=by))
    measure(f"guess_counts(by={by})", lambda: guess_counts(bundle, by=by))
    totals: dict[str, float] = {}
    for kind in plots.KINDS:
        plot, build_s = measure(
            f"distribution {kind}: build", lambda k=kind: plots.distribution(bundle, by, kind=k)
        )
        model, render_s = measure(
            f"distribution {kind}: render", lambda p=plot: hv.render(p, backend="bokeh")
        )
        totals[kind] = build_s + render_s
        first = rows[-2][1] + rows[-1][1]
        rows.append(
            (f"distribution {kind}: build + render", first, totals[kind], _browser_kib(model))
        )

    def raster() -> Any:
        return hv.render(plots.agents(bundle, agents_view.PREVIOUS, "guess"), backend="bokeh")

    model, _ = measure("agents previous_guess x guess: build + render", raster, max(1, repeats - 1))
    rows[-1] = (*rows[-1][:3], _browser_kib(model))

    def naive_stats() -> Any:
        joined = bundle.responses(2).merge(bundle.personas(), on="agent_id")
        valid = joined[joined["status"] == "ok"]
        return valid.groupby(by, observed=True)["guess"].describe()

    _, pandas_s = measure(f"baseline: pandas merge + groupby({by}).describe()", naive_stats)
    sample = min(baseline_sample, n)
    scale = n / sample

    def box_whisker() -> Any:
        joined = bundle.responses(2).merge(bundle.personas(), on="agent_id")
        raw = joined.loc[joined["status"] == "ok", [by, "guess"]].iloc[:sample]
        raw[by] = raw[by].astype(str)
        return hv.render(hv.BoxWhisker(raw, kdims=by, vdims="guess"), backend="bokeh")

    model, first, best = _timed(box_whisker, repeats)
    label = "baseline: hv.BoxWhisker on raw values: build + render"
    if scale > 1:
        label += f" ({sample:,} sampled, x{scale:g})"
    rows.append((label, first * scale, best * scale, _browser_kib(model) * scale))
    box_ratio = best * scale / totals["quantiles"]
    met = {kind: seconds < TARGET_SECONDS for kind, seconds in totals.items()}
    made = f"reused {bundle.path}" if built is None else f"built in {built:.1f} s: {bundle.path}"
    lines = [
        f"plots benchmark: {n:,} agents (paper-education, level_k), round 2, by {by}; "
        f"first and best of {repeats}",
        f"bundle: {made}",
        f"import holoviews + bokeh backend + viz.plots: {imported:.2f} s (once per process)",
        f"{'step':<76} {'first s':>8} {'best s':>8} {'browser KiB':>12}",
    ]
    for name, first_s, best_s, kib in rows:
        shown = f"{kib:>12.1f}" if kib is not None else f"{'':>12}"
        lines.append(f"{name:<76} {first_s:>8.3f} {best_s:>8.3f} {shown}")
    lines += [
        f"ratio group_summary vs pandas describe: {pandas_s / summary_s:.2f}x "
        "(pandas s / group_summary s)",
        f"ratio quantiles plot vs BoxWhisker on raw values: {box_ratio:.1f}x faster "
        "(BoxWhisker build + render s / distribution quantiles build + render s)",
        f"target: distribution by {by} (build + render, best) under {TARGET_SECONDS:g} s at "
        f"{n:,} agents: "
        + ", ".join(f"{k} {totals[k]:.2f} s {'met' if met[k] else 'MISSED'}" for k in totals),
    ]
    return "\n".join(lines)
