"""The estimate on a cluster: how many engines a Ray run asks, and each engine's share of a round.

On Ray with the model in model actors (`backend.model_placement` node or gpu, or auto resolving
to them: `model_actors.resolve_placement`), a round's distinct prompts are divided over the K
engines by one plan (`cluster_plan.plan_round`) over the shards' reports of their prompts
(`prompt_report.report_rows`), shards cut as the Ray backend cuts them
(`backend.shard_size(n, nodes)`). The round then takes as long as its largest engine's share.
`engine_shares` makes those reports from the estimate's own grouped prompts and plans them;
the estimate prices each engine's prompts at the rates it measured.

K: the `nodes` the caller gives (`workbench run CONFIG --estimate --nodes K`), else the alive
nodes of the Ray cluster this process is already connected to (the estimate never connects:
that starts or joins a cluster), else 1; one engine per node (a gpu placement's nodes may hold
more: give their count as `nodes`). `ClusterShape.note` says which it assumed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.agents.prompts import ShardPrompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import LLMPolicySpec, RunConfig
from workbench.runtime.cluster_plan import plan_round
from workbench.runtime.model_actors import resolve_placement
from workbench.runtime.prompt_report import report_rows


@dataclass(frozen=True)
class ClusterShape:
    """Where a run's prompts are walked: `engines` model actors each walking its share of a
    round's plan (1: one engine walks every prompt), shards of `shard_size` agents, and a
    sentence saying how K was found (empty off a cluster)."""

    engines: int = 1
    shard_size: int = 0
    note: str = ""

    @property
    def planned(self) -> bool:
        """Whether the rounds are divided over several engines by one plan."""
        return self.engines > 1


@dataclass(frozen=True)
class EngineShare:
    """One engine's share of a round: its distinct prompts, their prompt tokens (each prompt
    whole, as the plan balances them) and its seconds at the measured rates."""

    engine: int
    prompts: int
    tokens: int
    seconds: float


def cluster_shape(
    config: RunConfig, given_model: bool = False, nodes: int | None = None
) -> ClusterShape:
    """The engines and shards `config`'s run would use (see the module); one engine off Ray,
    outside distribution mode's model actors, or for a model in every shard or one actor."""
    backend = config.backend
    if backend.kind != "ray" or not isinstance(config.policy, LLMPolicySpec):
        return ClusterShape()
    placement = resolve_placement(config, given_model)
    if nodes is not None:
        k, how = nodes, "as given"
    else:
        connected = _connected_nodes()
        if connected is not None:
            k, how = connected, "the connected Ray cluster's alive nodes"
        else:
            k, how = 1, "not connected to the cluster; give --nodes K for its nodes"
    if k < 1:
        raise ValueError(f"nodes must be >= 1, got {k}")
    size = backend.shard_size(config.n_agents, k)
    if placement not in ("node", "gpu"):
        note = f"Ray, model_placement {placement}: one engine walks every prompt ({k} node(s))"
        return ClusterShape(1, size, note)
    note = f"Ray, model_placement {placement}: K = {k} engine(s), one per node ({how})"
    return ClusterShape(k, size, note)


def _connected_nodes() -> int | None:
    """Alive nodes of the Ray cluster this process is connected to; None when not connected
    (Ray is then not imported, nor started)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    return sum(1 for node in ray.nodes() if node["Alive"])


def engine_shares(
    cluster: ClusterShape,
    positions: np.ndarray,
    shard: AgentShard,
    grouped: ShardPrompts,
    ctx: RoundContext,
    tokens: Sequence[Sequence[int]],
    seconds: Callable[[np.ndarray], float],
) -> tuple[EngineShare, ...]:
    """Each engine's share of the round whose prompts are `grouped` (the estimated agents as one
    `shard`, at `positions` in the run's whole population; their prompts' `tokens`): the shards'
    reports as the Ray backend cuts the shards, planned over `cluster.engines`;
    `seconds(groups)` prices an engine's groups (positions into `grouped.chats`). () with one
    engine."""
    if not cluster.planned or not grouped.chats:
        return ()
    shards = positions // cluster.shard_size
    rows = shard_reports(shards, shard, grouped, ctx, [len(t) for t in tokens])
    plan = plan_round(rows.drop(columns="group"), cluster.engines)
    group_of = dict(zip(rows["key"], rows["group"], strict=False))
    shares = []
    for number, load in enumerate(plan.engines):
        groups = np.array(sorted(group_of[key] for key in load.keys), dtype=np.int64)
        shares.append(EngineShare(number, load.prompts, load.tokens, seconds(groups)))
    return tuple(shares)


def shard_reports(
    shards: np.ndarray,
    shard: AgentShard,
    grouped: ShardPrompts,
    ctx: RoundContext,
    tokens: Sequence[int],
) -> pd.DataFrame:
    """The reports (`prompt_report.report_rows`) of the run's shards, `shards` each agent's
    shard number, with each row's `group`: its position in `grouped`."""
    whole = report_rows(0, shard, grouped, ctx, tokens)
    pairs = pd.DataFrame({"shard": shards, "group": grouped.codes})
    counted = pairs.groupby(["shard", "group"], sort=True).size().reset_index(name="agents")
    rows = whole.drop(columns=["shard", "agents"]).iloc[counted["group"].to_numpy()]
    rows = rows.reset_index(drop=True)
    rows.insert(0, "shard", counted["shard"].to_numpy(dtype=np.int64))
    rows["agents"] = counted["agents"].to_numpy(dtype=np.int64)
    rows["group"] = counted["group"].to_numpy(dtype=np.int64)
    return rows


def shard_engine_agents(cluster: ClusterShape, positions: np.ndarray) -> np.ndarray:
    """The agents each engine answers when each shard asks its own node's engine (shard i on
    node i % K, as the Ray backend places them): one generation per agent is not planned."""
    engines = (positions // max(1, cluster.shard_size)) % cluster.engines
    return np.bincount(engines, minlength=cluster.engines)
