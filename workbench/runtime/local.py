"""LocalBackend: every shard in this process, all shards of a round awaited together on one loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pyarrow as pa

from workbench.agents.policies import Policy
from workbench.agents.shard import AgentShard, RoundContext


async def play_shard(shard: AgentShard, policy: Policy, ctx: RoundContext) -> pa.Table:
    """One shard's round: the policy decides for all its agents, the shard remembers them."""
    shard.forget_after(ctx.round - 1)
    decisions = await policy.act(shard, ctx)
    if decisions.num_rows != len(shard):
        raise RuntimeError(
            f"shard {shard.index}: policy returned {decisions.num_rows} decisions "
            f"for {len(shard)} agents"
        )
    shard.remember(ctx.round, decisions)
    return decisions


class LocalBackend:
    """Runs shards as concurrent asyncio tasks in this process (the default, embedded backend)."""

    name = "local"

    def __init__(self) -> None:
        self.shards: list[AgentShard] = []
        self.policy: Policy | None = None

    async def node_count(self) -> int:
        """One node: this process."""
        return 1

    async def prepare(self) -> None:
        """Nothing to start before the run: the policy and its model live in this process."""

    async def start(self, shards: Sequence[AgentShard], policy: Policy | None) -> None:
        """Take ownership of the shards and the policy that drives them."""
        if policy is None:
            raise ValueError("LocalBackend needs the policy its shards run")
        self.shards, self.policy = list(shards), policy

    async def play_round(self, ctx: RoundContext) -> list[pa.Table]:
        """Every shard's decisions for the round, in shard order."""
        if self.policy is None:
            raise RuntimeError("LocalBackend.start() must be called before play_round()")
        return list(await asyncio.gather(*(play_shard(s, self.policy, ctx) for s in self.shards)))

    def describe(self) -> dict[str, object]:
        """What ran where, for the bundle manifest."""
        return {"kind": self.name, "shards": len(self.shards)}

    async def close(self) -> None:
        """Nothing to release in process."""
        self.shards = []
