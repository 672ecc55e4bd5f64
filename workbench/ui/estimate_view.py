"""The cost before the run, in the Run tab: what Check shows beside its model verdict.

`estimate_markdown` is `workbench run CONFIG --estimate` as escaped Markdown: the mode and the
rates it was measured at, on a cluster the engines it assumed, one table row per round
(prompts, their bound, tokens, nodes, seconds) and the total. `run_estimate` computes it
(blocking: the page calls it off the event loop, as it checks the model) and says in words why
a run cannot be estimated.
"""

from __future__ import annotations

from typing import NamedTuple

from workbench.config import LLMPolicySpec, RunConfig
from workbench.errors import WorkbenchError
from workbench.runs.launcher import estimate_launch
from workbench.runtime.estimate import RunEstimate
from workbench.ui.safe_text import md

__all__ = ["ESTIMATE_COLUMNS", "EstimateShown", "estimate_markdown", "run_estimate"]

ESTIMATE_COLUMNS: dict[str, str] = {
    "round": "round",
    "prompts": "prompts",
    "prompts_bound": "at most",
    "tokens": "tokens",
    "nodes": "nodes",
    "seconds": "seconds",
}
"""The estimate's table columns (`RunEstimate.table()`) and their headers in the page."""


def estimate_markdown(estimate: RunEstimate) -> str:
    """The estimate as Markdown: its mode and rates, a row per round, the total; every value
    escaped (`md`)."""
    rates = ", ".join(f"{k} {v:.4g}" for k, v in estimate.rates.items()) or "none"
    header = "| " + " | ".join(md(h) for h in ESTIMATE_COLUMNS.values()) + " |"
    rule = "|" + "---:|" * len(ESTIMATE_COLUMNS)
    rows = []
    for row in estimate.table().to_dict("records"):
        cells = [f"{row[c]:,.1f}" if c == "seconds" else f"{row[c]:,}" for c in ESTIMATE_COLUMNS]
        rows.append("| " + " | ".join(md(c) for c in cells) + " |")
    total = f"about {estimate.seconds:,.0f} s in all"
    return "\n".join(
        [
            f"**Estimate**: {md(f'{estimate.n_agents:,} agents, {estimate.mode}')}; "
            f"rates measured here: {md(rates)}",
            *(["", md(estimate.cluster)] if estimate.cluster else []),
            "",
            header,
            rule,
            *rows,
            "",
            f"**{md(total)}** (later rounds draw agents' answers from the round before's "
            "distributions; at most: the most distinct prompts a round can have)",
        ]
    )


class EstimateShown(NamedTuple):
    """What the page shows of an estimate: its escaped Markdown, whether that says why there
    is none, and its seconds in all (for the time left while the run plays)."""

    markdown: str = ""
    failed: bool = False
    seconds: float | None = None


def run_estimate(config: RunConfig) -> EstimateShown:
    """The run's estimate; empty for a baseline policy (no model to ask), or why it could not
    be estimated."""
    if not isinstance(config.policy, LLMPolicySpec):
        return EstimateShown()
    try:
        estimate = estimate_launch(config)
    except (WorkbenchError, OSError) as exc:
        return EstimateShown(md(f"could not estimate the run: {exc}"), True)
    return EstimateShown(estimate_markdown(estimate), False, estimate.seconds)
