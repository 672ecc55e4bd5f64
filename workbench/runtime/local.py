"""LocalBackend: every shard in this process, all shards of a round awaited together on one loop."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from workbench.agents.factory import make_policy
from workbench.agents.policies import Policy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import RunConfig
from workbench.errors import ContractError
from workbench.llm.base import BatchProgress, track_progress
from workbench.llm.chat_model import ChatModel
from workbench.runtime.events import ShardProgress, rss_bytes, shard_done
from workbench.runtime.progress import PROGRESS_EVERY_S, Emit, ShardSink, progress_reports


async def play_shard(shard: AgentShard, policy: Policy, ctx: RoundContext) -> pa.Table:
    """One shard's round: the policy decides for all its agents, the shard remembers them."""
    shard.forget_after(ctx.round - 1)
    decisions = await policy.act(shard, ctx)
    if decisions.num_rows != len(shard):
        raise ContractError(
            f"shard {shard.index}: policy returned {decisions.num_rows} decisions "
            f"for {len(shard)} agents"
        )
    shard.remember(ctx.round, decisions)
    return decisions


class LocalBackend:
    """Runs shards as concurrent asyncio tasks in this process (the default, embedded backend).

    `LocalBackend(config, model)` builds the config's policy in `prepare()` (loading `model`, or
    the config's model); `LocalBackend(policy=...)` runs a policy built by the caller.
    """

    name = "local"

    def __init__(
        self,
        config: RunConfig | None = None,
        model: ChatModel | None = None,
        *,
        policy: Policy | None = None,
        progress_every_s: float = PROGRESS_EVERY_S,
    ) -> None:
        self.config = config
        self.progress_every_s = progress_every_s
        self.model = model
        self.shards: list[AgentShard] = []
        self.policy: Policy | None = policy
        self.run_id: str | None = None
        self.shard_sink: ShardSink | None = None

    async def node_count(self) -> int:
        """One node: this process."""
        return 1

    async def prepare(self) -> None:
        """Build the policy (an LLM policy loads its model here, before anything is written)."""
        if self.policy is None:
            if self.config is None:
                raise ContractError("LocalBackend needs a config or a policy")
            self.policy = make_policy(self.config, self.model)

    async def start(self, shards: Sequence[AgentShard], policy: Policy | None = None) -> None:
        """Take ownership of the shards (and of `policy`, when the caller built one)."""
        if policy is not None:
            self.policy = policy
        await self.prepare()
        self.shards = list(shards)

    async def play_round(self, ctx: RoundContext, emit: Emit | None = None) -> list[pa.Table]:
        """Every shard's decisions for the round, in shard order; progress of shards still
        playing (answers so far, as the model reports them) every `progress_every_s`."""
        policy = self.policy
        if policy is None:
            raise ContractError("LocalBackend.start() must be called before play_round()")
        playing: dict[int, BatchProgress] = {}

        async def play(shard: AgentShard) -> pa.Table:
            start = time.perf_counter()
            if emit is not None:
                emit(ShardProgress(round=ctx.round, shard=shard.index, agents=len(shard)))
            try:
                with track_progress(playing.setdefault(shard.index, BatchProgress())):
                    table = await play_shard(shard, policy, ctx)
            finally:
                playing.pop(shard.index, None)
            if self.shard_sink is not None:
                await self.shard_sink(ctx.round, shard.index, table)
            if emit is not None:
                seconds = time.perf_counter() - start
                emit(shard_done(table, ctx.round, shard.index, seconds, node="local"))
            return table

        async def read() -> dict[int, dict[str, Any]]:
            where = {"node": "local", "pid": os.getpid(), "rss_bytes": rss_bytes()}
            return {i: {**p.snapshot(), **where} for i, p in list(playing.items())}

        agents = {s.index: len(s) for s in self.shards}
        async with progress_reports(ctx.round, agents, read, emit, self.progress_every_s):
            return list(await asyncio.gather(*(play(s) for s in self.shards)))

    async def engine_work(self, round_number: int) -> list[dict[str, Any]]:
        """Nothing: the one engine here is the run's own (`bench scale` reads its counts)."""
        return []

    def describe(self) -> dict[str, object]:
        """What ran where, for the bundle manifest."""
        return {"kind": self.name, "shards": len(self.shards)}

    async def close(self) -> None:
        """Release the shards (the model stays loaded: llama.cpp models are cached per process)."""
        self.shards = []
