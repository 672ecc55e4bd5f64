"""LocalBackend: every shard in this process, all shards of a round awaited together on one loop.

A served model with several endpoints that draws answers in distribution mode gets one plan per
round (`_plan`): every shard reports its distinct prompts, `cluster_plan.plan_round` gives each
to one endpoint, and the model walks it there (`llm.endpoints`); each endpoint's work is on the
record (`engine_work`).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from workbench.agents.factory import make_policy
from workbench.agents.policies import LLMPolicy, Policy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import RunConfig
from workbench.errors import ContractError
from workbench.llm.base import BatchProgress, ChatRequest, track_progress
from workbench.llm.chat_model import ChatModel
from workbench.llm.endpoints import Endpoints
from workbench.llm.routes import Routes
from workbench.runtime.cluster_plan import plan_round
from workbench.runtime.events import ShardProgress, rss_bytes, shard_done
from workbench.runtime.progress import PROGRESS_EVERY_S, Emit, ShardSink, progress_reports
from workbench.runtime.prompt_report import shard_report


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
        await self._plan(ctx)
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

    def _endpoints(self) -> Endpoints | None:
        """The model's endpoints when a round's prompts are divided over them (distribution
        mode, several endpoints); None otherwise."""
        policy = self.policy
        if not (isinstance(policy, LLMPolicy) and policy.distribution):
            return None
        return policy.model.endpoints()

    async def _plan(self, ctx: RoundContext) -> None:
        """The round's plan over the model's endpoints (`cluster_plan.plan_round` over every
        shard's report, prompt tokens as the model's scorer counts them), given to the model as
        the round's routes; nothing without endpoints."""
        policy, endpoints = self.policy, self._endpoints()
        if endpoints is None or not isinstance(policy, LLMPolicy):
            return
        scorer = policy.model.node_scorer()  # there is one: answers are drawn

        async def count(chats: Sequence[ChatRequest]) -> list[int]:
            found = await scorer.prompt_tokens(chats) if scorer is not None else []
            return [len(tokens) for tokens in found]

        reports = [await shard_report(policy.prompts, s, ctx, count) for s in self.shards]
        plan = plan_round(pd.concat(reports, ignore_index=True), endpoints.engines)
        endpoints.route(Routes(tuple(range(endpoints.engines)), plan.engine_of))

    async def engine_work(self, round_number: int) -> list[dict[str, Any]]:
        """Each endpoint's work in the round where the model's are planned (`_plan`); else
        nothing: the one engine here is the run's own (`bench scale` reads its counts)."""
        endpoints = self._endpoints()
        return [] if endpoints is None else endpoints.work(round_number)

    def describe(self) -> dict[str, object]:
        """What ran where, for the bundle manifest."""
        described: dict[str, object] = {"kind": self.name, "shards": len(self.shards)}
        endpoints = self._endpoints()
        if endpoints is not None:
            described["endpoints"] = endpoints.engines
            described["division"] = "one plan per round: each distinct prompt on one endpoint"
        return described

    async def close(self) -> None:
        """Release the shards (the model stays loaded: llama.cpp models are cached per process)."""
        self.shards = []
