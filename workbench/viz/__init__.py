"""Plots and analysis of result bundles: distributions by any persona column, round
trajectories, the cognitive-hierarchy fit and the human and LLM baselines.

`answers` joins one round's answers to a persona column, `stats` holds the pure grouped
statistics, `distributions` the tidy tables for plots, `hierarchy` the Poisson
cognitive-hierarchy model and its tau fit, `baselines` the reference numbers with sources.
`figures` draws the tables as paper-style matplotlib figures and `plots` as interactive
HoloViews plots (the same functions and arguments); `save_figure` stores either in a bundle.
viz reads bundles only (never runs a game). The names below load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

if TYPE_CHECKING:
    from workbench.viz.baselines import (
        human_baselines,
        llm_baselines,
        paper_findings,
        paper_prompt_means,
        paper_rounds,
        peer_benchmarks,
    )
    from workbench.viz.distributions import (
        compare_bundles,
        group_summary,
        guess_counts,
        round_trajectories,
        tokens_per_response,
    )
    from workbench.viz.figure_files import save_figure
    from workbench.viz.hierarchy import (
        HUMAN_TAU,
        TauFit,
        fit_tau,
        fit_tau_by_group,
        level_guesses,
        poisson_shares,
        predicted_mean,
        tau_from_mean,
    )

_HOMES: dict[str, str] = {
    "human_baselines": "workbench.viz.baselines",
    "llm_baselines": "workbench.viz.baselines",
    "paper_findings": "workbench.viz.baselines",
    "paper_prompt_means": "workbench.viz.baselines",
    "paper_rounds": "workbench.viz.baselines",
    "peer_benchmarks": "workbench.viz.baselines",
    "compare_bundles": "workbench.viz.distributions",
    "group_summary": "workbench.viz.distributions",
    "guess_counts": "workbench.viz.distributions",
    "round_trajectories": "workbench.viz.distributions",
    "tokens_per_response": "workbench.viz.distributions",
    "save_figure": "workbench.viz.figure_files",
    "HUMAN_TAU": "workbench.viz.hierarchy",
    "TauFit": "workbench.viz.hierarchy",
    "fit_tau": "workbench.viz.hierarchy",
    "fit_tau_by_group": "workbench.viz.hierarchy",
    "level_guesses": "workbench.viz.hierarchy",
    "poisson_shares": "workbench.viz.hierarchy",
    "predicted_mean": "workbench.viz.hierarchy",
    "tau_from_mean": "workbench.viz.hierarchy",
}

__all__ = [
    "HUMAN_TAU",
    "TauFit",
    "compare_bundles",
    "fit_tau",
    "fit_tau_by_group",
    "group_summary",
    "guess_counts",
    "human_baselines",
    "level_guesses",
    "llm_baselines",
    "paper_findings",
    "paper_prompt_means",
    "paper_rounds",
    "peer_benchmarks",
    "poisson_shares",
    "predicted_mean",
    "round_trajectories",
    "save_figure",
    "tau_from_mean",
    "tokens_per_response",
]


__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())
