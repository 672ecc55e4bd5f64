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

from workbench.agents.factory import make_policy
from workbench.agents.policies import LLMPolicy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.bench.embedded import bench_config
from workbench.errors import ConfigError
from workbench.llm.distribution.embedded import WholePromptModel, WholePromptScorer
from workbench.results.exact import ExactRound
from workbench.runtime import Simulation
from workbench.runtime.blocking import run_blocking
from workbench.runtime.exact_groups import exact_of
from workbench.runtime.prompt_walks import PromptWalks, walk_prompts

SCHEMES: tuple[str, str] = ("pieces", "whole")
"""The two evaluations compared: the canonical pieces (what runs draw from) and one batch."""


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

    @property
    def largest_shift(self) -> float:
        """The largest |shift| of a group's mean between the two evaluations."""
        return float(self.table["shift"].abs().max())

    def beyond_numerics(self, factor: float = 2.0) -> list[str]:
        """Groups whose gap from the population is more than `factor` times the largest shift
        (and so more than the engine's numerics can make)."""
        keep = self.table["gap"].abs() > factor * self.largest_shift
        return self.table.loc[keep, self.by].astype(str).tolist()

    def __str__(self) -> str:
        shown = self.table.copy()
        for column in ("mean_pieces", "mean_whole", "shift", "gap"):
            shown[column] = shown[column].map("{:.2f}".format)
        shown["tvd"] = shown["tvd"].map("{:.3f}".format)
        beyond = self.beyond_numerics()
        return (
            f"noise: round 1, {self.n_agents:,} agents, {self.prompts} distinct prompts, each "
            f"walked whole as {SCHEMES[0]} (canonical) and {SCHEMES[1]} (one batch)\n"
            f"{shown.to_string(index=False)}\n"
            f"all agents: mean shift {self.overall_shift:+.2f}, TVD {self.overall_tvd:.3f}; "
            f"largest group shift {self.largest_shift:.2f}\n"
            f"groups whose gap from the population exceeds twice that: "
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
    to game.group_by, else the population's first dimension."""
    cfg = bench_config(config, n=n, rounds=1, sampling="workbench")
    sim = Simulation(cfg)
    personas, model = sim.personas, sim.model
    by = by or cfg.game.group_by or sim.population.dimensions[0].name
    if by not in personas:
        raise ConfigError(f"--by: {by!r} is not a persona column; one of {list(personas)}")
    policy = make_policy(cfg, model)
    assert isinstance(policy, LLMPolicy)
    shard = AgentShard(0, personas, 1)
    ctx = RoundContext.of(cfg)
    model.load()
    pieces = _exact(await walk_prompts(policy, shard, ctx), personas)
    whole_scorer = WholePromptScorer(WholePromptModel(model))
    whole = _exact(await walk_prompts(policy, shard, ctx, whole_scorer), personas)
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
    )


def noise_bench(
    config: Path | None = None, *, n: int | None = None, by: str | None = None
) -> NoiseReport:
    """Blocking `anoise`."""
    return run_blocking(anoise(config, n=n, by=by))
