"""The backend spec: where shards of agents run (in this process, or as Ray actors)."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, ConfigDict, Field, model_validator

from workbench.config.base import StrictModel
from workbench.errors import ConfigError


class BackendSpec(StrictModel):
    """Where shards run: `local` (one asyncio loop in this process) or `ray` (an actor per shard).

    Shard size: `agents_per_shard` (alias `agents_per_actor`; 1 is the paper's one-to-one mode)
    or `shards_per_node`; at most one of them. Neither: 100,000 agents a shard locally, two
    shards per node on Ray.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)

    kind: Literal["local", "ray"] = Field(
        "local",
        description="local: every shard in one asyncio loop in this process; ray: one actor per "
        "shard on a Ray cluster",
    )
    agents_per_shard: int | None = Field(
        None,
        ge=1,
        validation_alias=AliasChoices("agents_per_shard", "agents_per_actor"),
        description="agents held (as columns) by one shard / Ray actor",
    )
    shards_per_node: int | None = Field(
        None, ge=1, description="shards (actors) per node; the shard size follows from n_agents"
    )
    address: str | None = Field(
        None, description="Ray cluster: 'auto', 'host:port', or empty for a local cluster"
    )
    max_restarts: int = Field(
        3, ge=0, le=100, description="respawns of a dead shard (or model actor) per round"
    )
    model_placement: Literal["auto", "shard", "node", "gpu", "cluster"] = Field(
        "auto",
        description="where LLM agents' models live on Ray: in every shard actor, one model "
        "actor per node, one per GPU (each shard asks one on its node), or one for the "
        "cluster; auto: gpu for vllm, cluster for openai (max_concurrency then holds "
        "cluster-wide) and for a model object given to Simulation, node for replay and "
        "embedded (the shard actors of a node share its one engine and its cores)",
    )

    @model_validator(mode="after")
    def _one_size(self) -> BackendSpec:
        if self.agents_per_shard is not None and self.shards_per_node is not None:
            raise ValueError("give agents_per_shard (or agents_per_actor) or shards_per_node")
        if self.kind == "local" and self.address is not None:
            raise ValueError("address is for kind: ray; remove it or set kind: ray")
        if self.kind == "local" and self.model_placement != "auto":
            raise ValueError("model_placement is for kind: ray; remove it or set kind: ray")
        return self

    def shard_size(self, n_agents: int, n_nodes: int = 1) -> int:
        """Agents per shard for `n_agents` on `n_nodes`; ConfigError if shards would be empty."""
        if self.agents_per_shard is not None:
            size = self.agents_per_shard
        elif self.shards_per_node is not None or self.kind == "ray":
            shards = (self.shards_per_node or 2) * n_nodes
            if shards > n_agents:
                raise ConfigError(
                    f"backend.shards_per_node: {shards} shards for {n_agents} agents would leave "
                    "shards empty; use fewer shards or more agents"
                )
            size = -(-n_agents // shards)
        else:
            size = 100_000
        return size
