"""`workbench bench noise`: how far the engine's numerics move a config's round-1 groups.

A distribution-mode answer is an exact draw for the evaluation the model pins (the prompt in
canonical pieces, `engine.PIECES_RULE`). Evaluating the same prompts whole, in one batch, is as
valid, and llama.cpp's batch numerics move the logits (up to 0.5 measured), so the answer
distributions move too. Here every distinct round-1 prompt is walked whole under both
evaluations (`runtime.prompt_walks`, the second on a private engine, `WholePromptModel`), and
each group of a persona column gets its exact mean under each, the shift, and the total
variation distance (TVD) between its two answer distributions. A group's gap from the
population's mean that is not well beyond the largest shift is within the engine's numerics,
not a finding about the group.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.bench.embedded import bench_config, bench_settings
from workbench.bench.whole_prompt import WholePromptModel, WholePromptScorer
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.llm import sampling_params
from workbench.results import Bundle
from workbench.results.exact_gaps import NUMERICS_FACTOR, beyond_numerics
from workbench.results.exact_store import ExactRound
from workbench.results.layout import MANIFEST
from workbench.runtime import Simulation
from workbench.runtime.blocking import run_blocking
from workbench.runtime.exact_rounds import exact_of
from workbench.runtime.prompt_walks import PromptWalks, walk_prompts

SCHEMES: tuple[str, str] = ("pieces", "whole")
"""The two evaluations compared: the canonical pieces (what runs draw from) and one batch."""


LEGEND = (
    "columns: n agents; mean_pieces and mean_whole the group's exact mean under each "
    "evaluation; shift = mean_whole - mean_pieces; tvd the total variation distance of its two "
    "answer distributions (0: the same, 1: disjoint); gap = mean_pieces - the population's mean"
)
"""What the report's columns are, printed under its table."""


@dataclass(frozen=True)
class NoiseReport:
    """Per group of `by`: agents, the exact mean under each evaluation, the shift, the TVD of
    the two answer distributions, and the group's gap from the population's mean."""

    by: str
    n_agents: int
    prompts: int
    table: pd.DataFrame
    overall_shift: float
    overall_tvd: float
    chosen: str = "--by"
    columns: tuple[str, ...] = ()
    """How `by` was chosen (--by, game.group_by, the population's first dimension) and the
    persona columns another --by may name."""

    @property
    def largest_shift(self) -> float:
        """The largest |shift| of a group's mean between the two evaluations."""
        return float(self.table["shift"].abs().max())

    def beyond_numerics(self, factor: float = NUMERICS_FACTOR) -> list[str]:
        """Groups whose gap from the population is more than `factor` times the largest shift
        (and so more than the engine's numerics can make: `results.exact_gaps`' rule)."""
        shift = self.largest_shift
        keep = [beyond_numerics(g, shift, factor) for g in self.table["gap"]]
        return self.table.loc[keep, self.by].astype(str).tolist()

    def __str__(self) -> str:
        shown = self.table.copy()
        for column in ("mean_pieces", "mean_whole", "shift", "gap"):
            shown[column] = shown[column].map("{:.2f}".format)
        shown["tvd"] = shown["tvd"].map("{:.3f}".format)
        beyond = self.beyond_numerics()
        others = [c for c in self.columns if c != self.by]
        choose = f"; another with --by COLUMN, one of: {', '.join(others)}" if others else ""
        return (
            f"noise: round 1, {self.n_agents:,} agents, {self.prompts} distinct prompts, each "
            f"walked whole as {SCHEMES[0]} (canonical) and {SCHEMES[1]} (one batch)\n"
            f"grouped by {self.by} ({self.chosen}{choose})\n"
            f"{shown.to_string(index=False)}\n"
            f"{LEGEND}\n"
            f"all agents: mean shift {self.overall_shift:+.2f}, TVD {self.overall_tvd:.3f}; "
            f"largest group shift {self.largest_shift:.2f}\n"
            f"groups whose gap from the population exceeds {NUMERICS_FACTOR:g} x that: "
            f"{', '.join(beyond) if beyond else 'none'}"
        )


def _exact(walks: PromptWalks, personas: pd.DataFrame) -> ExactRound:
    """A round-1 walk as an `ExactRound` (nothing drawn)."""
    return exact_of(
        walks, 1, personas, pd.DataFrame({"agent_id": personas["agent_id"], "guess": np.nan})
    )


def _tvd(a: pd.DataFrame, b: pd.DataFrame) -> float:
    """Total variation distance of two (answer, exact_share) tables."""
    joined = a.set_index("answer")["exact_share"].sub(
        b.set_index("answer")["exact_share"], fill_value=0.0
    )
    return float(joined.abs().sum() / 2)


async def anoise(
    config: Path | None = None, *, n: int | None = None, by: str | None = None
) -> NoiseReport:
    """Walk a config's round-1 prompts under both evaluations (see the module); `by` defaults
    to game.group_by, else the population's first dimension (`default_by`)."""
    return await anoise_of(bench_config(config, n=n, rounds=1, sampling="workbench"), by)


def default_by(config: RunConfig) -> str:
    """The persona column noise groups by when none is given: game.group_by, else the
    population's first dimension."""
    return config.game.group_by or config.population.dimensions[0].name


def bundle_noise(bundle: Bundle, by: str | None = None) -> NoiseReport:
    """`noise_bench` for the prompts of a bundle's round 1: its own config (agents, seed,
    population, prompt, model) walked under both evaluations; ConfigError naming the field
    when its agents did not ask the embedded model."""
    source = bundle.path / MANIFEST
    config = bench_settings(bundle.config, source, rounds=1, sampling="workbench")
    return run_blocking(anoise_of(config, by))


async def anoise_of(cfg: RunConfig, by: str | None = None) -> NoiseReport:
    """`anoise` of a config already set for the bench (`bench_config`, `bench_settings`)."""
    sim = Simulation(cfg)
    personas, model = sim.personas, sim.model
    chosen = "--by" if by else "game.group_by" if cfg.game.group_by else "the first dimension"
    by = by or default_by(cfg)
    columns = tuple(c for c in personas.columns if c not in ("agent_id", "persona"))
    if by not in personas:
        raise ConfigError(f"--by: {by!r} is not a persona column; one of {list(columns)}")
    prompts, params = Prompts.of(cfg), sampling_params(cfg.model)
    shard = AgentShard(0, personas, 1)
    ctx = RoundContext.of(cfg)
    model.load()
    pieces = _exact(await walk_prompts(prompts, shard, ctx, model.node_scorer(), params), personas)
    whole_scorer = WholePromptScorer(WholePromptModel(model))
    whole = _exact(await walk_prompts(prompts, shard, ctx, whole_scorer, params), personas)
    a, b = pieces.groups(by).set_index(by), whole.groups(by).set_index(by)
    shares_a, shares_b = pieces.shares(by), whole.shares(by)
    population = pieces.expected()[0]
    rows = []
    for category in a.index:
        rows.append(
            {
                by: category,
                "n": int(a.at[category, "n"]),
                "mean_pieces": a.at[category, "exact_mean"],
                "mean_whole": b.at[category, "exact_mean"],
                "shift": b.at[category, "exact_mean"] - a.at[category, "exact_mean"],
                "tvd": _tvd(shares_a[shares_a[by] == category], shares_b[shares_b[by] == category]),
                "gap": a.at[category, "exact_mean"] - population,
            }
        )
    return NoiseReport(
        by,
        cfg.n_agents,
        pieces.n_prompts,
        pd.DataFrame(rows),
        whole.expected()[0] - population,
        _tvd(pieces.answer_shares(), whole.answer_shares()),
        chosen,
        columns,
    )


def noise_bench(
    config: Path | None = None, *, n: int | None = None, by: str | None = None
) -> NoiseReport:
    """Blocking `anoise`."""
    return run_blocking(anoise(config, n=n, by=by))
