"""The Results tab's Exact view: per group, the exact mean of its answer law with the band its
sampled mean falls in, and for each gap between two groups the verdict in plain words.

On a bundle kept with `output.exact_distributions`, `viz.plots.exact_groups` draws the groups
and `results.exact_gaps` makes the tables: the groups' bands, and each pair's gap with what
sampling and the engine's numerics make of it. The numerics are `workbench bench noise`'s
measure, run here on the bundle's own round-1 prompts (`bench.noise.bundle_noise`, the
embedded model, in a worker thread) when the person asks: it takes the model some seconds, so
it is never run unasked; its largest group shift is kept per bundle and column for the page's
life. A bundle without exact distributions says how to keep them.

A mixin of `ResultsExplorer`: it reads the explorer's params (`run_id`, `by`, `round`,
`numerics`, `measuring`) and its `bundle()`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pandas as pd
import panel as pn
from bokeh.models.widgets.tables import NumberFormatter

from workbench.errors import BundleError, WorkbenchError
from workbench.results.exact_gaps import group_bands, group_gaps
from workbench.ui.results_views import alert
from workbench.ui.safe_text import TextTable, md
from workbench.viz import plots

__all__ = ["ExactViews", "numbers_formatted"]

KEEP_THEM = (
    "Exact distributions are kept by a run with `output.exact_distributions: true` (in its "
    "config, or `--set output.exact_distributions=true`); distribution mode only "
    "(model.sampling: workbench)."
)
"""How a person gets an Exact view for a bundle that has none."""

BAND_COLUMNS = ("n", "exact_mean", "band_low", "band_high", "sampled_mean", "in_band")
"""The group table's columns after the group's name."""


def numbers_formatted(frame: pd.DataFrame) -> dict[str, NumberFormatter]:
    """Tabulator formatters showing every float column of `frame` with 2 decimals (the page's
    one precision for statistics; the frame keeps the exact values)."""
    return {c: NumberFormatter(format="0.00") for c in frame.columns if frame[c].dtype.kind == "f"}


def numerics_key(run_id: str | None, by: str | None) -> str:
    """The key of a measured shift in the explorer's `numerics`: the bundle and the column."""
    return f"{run_id}\x1f{by}"


class ExactViews:
    """The Exact view (see the module)."""

    run_id: str | None
    by: str | None
    round: int | None
    numerics: dict[str, Any]
    measuring: bool
    bundle: Callable[[], Any]
    param: Any

    def exact_frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The chosen bundle's exact group table and its gaps (`results.exact_gaps`) for
        `round` and `by`; BundleError saying how to keep them when the bundle has none."""
        bundle = self.bundle()
        kept = bundle.exact_rounds
        if not kept:
            raise BundleError(f"{bundle.run_id} kept no exact distributions. {KEEP_THEM}")
        if self.round not in kept:
            raise BundleError(
                f"{bundle.run_id}: round {self.round} has no exact distributions; "
                f"they are kept for rounds {kept}: choose one of them above"
            )
        if self.by is None:
            raise BundleError(f"{bundle.run_id}: its personas have no column to group by")
        bands = group_bands(bundle.exact(self.round), self.by)
        measured = self.numerics.get(numerics_key(self.run_id, self.by))
        shift = measured if isinstance(measured, float) else None
        return bands, group_gaps(bands, self.by, shift)

    def exact_view(self) -> Any:
        """The groups' plot, their table and the gaps' verdicts, or why there are none."""
        try:
            bands, gaps = self.exact_frames()
            plot = plots.exact_groups(self.bundle(), str(self.by), int(self.round or 1))
        except WorkbenchError as exc:
            return alert(str(exc), "info")
        groups = bands[[str(self.by), *BAND_COLUMNS]]
        return pn.Column(
            pn.pane.Markdown(
                "Each group's **exact mean** is what its agents' answer laws give on average, "
                "not an estimate; its **sampled mean**, what they drew, falls inside the 95% "
                "band around it unless something is off. Below, each gap between two groups "
                "and what sampling and the engine's numerics make of it."
            ),
            pn.pane.HoloViews(plot, sizing_mode="stretch_width"),
            self._exact_table(groups, "wb-exact-groups"),
            self._numerics_row(),
            self._exact_table(gaps, "wb-exact-gaps", wrapped="verdict"),
            sizing_mode="stretch_width",
            css_classes=["wb-exact"],
        )

    def _exact_table(self, frame: pd.DataFrame, css: str, wrapped: str | None = None) -> TextTable:
        """A table of the view: statistics with 2 decimals, the `wrapped` column's long text
        wrapped in its cell."""
        formatters: dict[str, Any] = dict(numbers_formatted(frame))
        if wrapped is not None:
            formatters[wrapped] = {"type": "textarea"}
        return TextTable(
            frame,
            formatters=formatters,
            disabled=True,
            show_index=False,
            layout="fit_data_stretch",
            widths={wrapped: 560} if wrapped else {},
            sizing_mode="stretch_width",
            css_classes=[css],
        )

    def _numerics_row(self) -> pn.Row:
        """The numerics' state for this bundle and column, and the button that measures them."""
        measured = self.numerics.get(numerics_key(self.run_id, self.by))
        if isinstance(measured, float):
            said = (
                f"The engine's numerics, measured on round 1's prompts by {md(str(self.by))}: "
                f"the largest shift of a group's exact mean under another evaluation is "
                f"**{measured:.2f}** (`workbench bench noise`)."
            )
        elif isinstance(measured, str):
            said = f"The engine's numerics could not be measured here: {md(measured)}"
        else:
            said = (
                "The engine's numerics are not measured yet: **Measure numerics** walks round "
                "1's prompts again under a second evaluation on the embedded model, as "
                "`workbench bench noise` does (some seconds to minutes)."
            )
        button = pn.widgets.Button(
            label="Measure numerics",
            color="primary",
            disabled=self.param.measuring,
            css_classes=["wb-exact-measure"],
        )
        button.on_click(self._on_measure)
        return pn.Row(button, pn.pane.Markdown(said, sizing_mode="stretch_width"))

    async def measure_numerics(self) -> None:
        """Run `bench noise` on the chosen bundle's round-1 prompts grouped by `by`, in a
        worker thread, and keep its largest group shift (or why it cannot run) in `numerics`."""
        from workbench.bench.noise import bundle_noise

        if self.run_id is None or self.measuring:
            return
        bundle, by, key = self.bundle(), self.by, numerics_key(self.run_id, self.by)
        self.measuring = True
        try:
            report = await asyncio.to_thread(bundle_noise, bundle, by)
            result: float | str = report.largest_shift
        except WorkbenchError as exc:
            result = str(exc)
        finally:
            self.measuring = False
        self.numerics = {**self.numerics, key: result}

    async def _on_measure(self, _event: Any) -> None:
        await self.measure_numerics()
