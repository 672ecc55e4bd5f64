"""The per-agent 2-D view: one point per valid answer, rasterized with datashader past
RASTERIZE_ABOVE points (the browser then gets an image, not a million glyphs).

Columns are a round's numeric answer columns (guess, latency_s, prompt_tokens,
completion_tokens), the agent's guess in the round before (PREVIOUS), or any numeric persona
column; category columns belong to `plots.distribution`.
"""

from __future__ import annotations

import holoviews as hv
import numpy as np
import pandas as pd
import pyarrow.compute as pc

from workbench.errors import ConfigError
from workbench.results import Bundle
from workbench.viz import colours
from workbench.viz.answers import VALID_STATUS, BundleLike, as_bundle, resolve_round
from workbench.viz.plot_parts import HEIGHT, WIDTH, opts, round_row

RASTERIZE_ABOVE = 100_000
"""More points than this are rasterized with datashader (read at call time)."""

PREVIOUS = "previous_guess"
"""The column of each agent's valid guess in the round before."""

LABELS = {PREVIOUS: "guess in the round before", "latency_s": "latency (s)"}
"""Axis labels of the columns whose names are not words."""

ANSWER_COLUMNS: tuple[str, ...] = ("guess", "latency_s", "prompt_tokens", "completion_tokens")
"""The numeric per-answer columns a view can use."""


def agents(bundle: BundleLike, x: str, y: str, round: int | None = None) -> hv.Element:
    """Each agent of a round (the last when None) at (x, y): Points with hover up to
    RASTERIZE_ABOVE valid answers, a datashader-rasterized image (a DynamicMap that re-renders
    on zoom) past it. The round's target is a line on a guess axis."""
    bundle = as_bundle(bundle)
    number = resolve_round(bundle, round)
    frame = agent_values(bundle, [x, y], number)
    dims = [hv.Dimension(c, label=LABELS.get(c, c)) for c in (x, y)]
    points = hv.Points(frame, kdims=dims, vdims=["agent_id"])
    title = f"{bundle.run_id}: round {number}, {len(frame):,} agents"
    if len(frame) > RASTERIZE_ABOVE:
        from holoviews.operation.datashader import rasterize

        view = opts(
            rasterize(points),
            cmap="viridis",
            cnorm="eq_hist",
            colorbar=True,
            tools=["hover"],
            clabel="agents",
        )
        title += " (rasterized)"
    else:
        view = opts(points, size=3, alpha=0.4, color=colours.GUESSES, tools=["hover"])
    target = float(round_row(bundle, number)["target"])
    lines = []
    if y == "guess" and np.isfinite(target):
        lines.append(opts(hv.HLine(target, label="target"), color=colours.TARGET, line_width=2))
    if x == "guess" and np.isfinite(target):
        lines.append(opts(hv.VLine(target, label="target"), color=colours.TARGET, line_width=2))
    for line in lines:  # `*` keeps a rasterized view one DynamicMap
        view = view * line
    return opts(view, title=title, width=WIDTH, height=HEIGHT)


def agent_values(bundle: Bundle, columns: list[str], number: int) -> pd.DataFrame:
    """agent_id and the asked columns for round `number`'s valid answers (status ok, finite
    guess) whose values are all finite. ConfigError naming the usable columns otherwise."""
    personas = bundle.personas()
    usable = _numeric_columns(personas)
    for name in columns:
        if name not in usable:
            kind = "a category column: plot it with plots.distribution" if name in personas else ""
            raise ConfigError(
                f"x/y: {name!r} is not a numeric column{'; ' + kind if kind else ''}; "
                f"columns: {usable}"
            )
    wanted = [c for c in dict.fromkeys(columns) if c in ANSWER_COLUMNS and c != "guess"]
    frame = _valid_answers(bundle, number, wanted)
    if PREVIOUS in columns:
        if number == min(int(r) for r in bundle.rounds()["round"]):
            raise ConfigError(f"x/y: {PREVIOUS} needs a round before round {number}; give round=")
        before = _valid_answers(bundle, number - 1, []).set_index("agent_id")["guess"]
        frame[PREVIOUS] = frame["agent_id"].map(before)
    from_personas = [c for c in dict.fromkeys(columns) if c in personas.columns]
    if from_personas:
        where = pd.Index(personas["agent_id"].to_numpy()).get_indexer(frame["agent_id"])
        for name in from_personas:
            frame[name] = personas[name].to_numpy()[where]
    keep = np.all([np.isfinite(frame[c].to_numpy(dtype=float)) for c in columns], axis=0)
    return frame.loc[keep, ["agent_id", *dict.fromkeys(columns)]].reset_index(drop=True)


def _valid_answers(bundle: Bundle, number: int, extra: list[str]) -> pd.DataFrame:
    """agent_id, guess and `extra` columns of a round's valid answers."""
    table = bundle.responses_table(number).select(["agent_id", "guess", "status", *extra])
    ok = pc.fill_null(pc.equal(table.column("status"), VALID_STATUS), False)
    frame = table.filter(ok).drop_columns(["status"]).to_pandas()
    return frame[np.isfinite(frame["guess"].to_numpy(dtype=float))]


def _numeric_columns(personas: pd.DataFrame) -> list[str]:
    """The columns a view can plot: the answer columns, PREVIOUS and numeric persona columns."""
    numeric = [
        c
        for c in personas.columns
        if c != "agent_id"
        and pd.api.types.is_numeric_dtype(personas[c])
        and not pd.api.types.is_bool_dtype(personas[c])
    ]
    return [*ANSWER_COLUMNS, PREVIOUS, *numeric]
