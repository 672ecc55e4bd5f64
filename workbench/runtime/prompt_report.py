"""A round's prompts as a shard reports them to the cluster's plan (`runtime.cluster_plan`).

One row per distinct prompt of the shard (`cluster_plan.REPORT_COLUMNS`): its identity
(`llm.routes.prompt_key`), its affinity path (persona and model, then the agent's earlier numbers:
what the prompt's prefix is made of), its prompt tokens as the model counts them and how many of
the shard's agents ask it. Never the agents themselves: the plan needs sizes, not who.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts, ShardPrompts, column_text
from workbench.agents.shard import AgentShard, RoundContext
from workbench.llm.base import ChatRequest
from workbench.llm.routes import request_key

CountTokens = Callable[[Sequence[ChatRequest]], Awaitable[Sequence[int]]]
"""How many prompt tokens each chat is, as the run's model counts them."""


def prompt_paths(
    shard: AgentShard, rows: Sequence[int] | np.ndarray, ctx: RoundContext
) -> list[tuple[str, ...]]:
    """The affinity path of the prompts of the agents at positions `rows`: "persona|model", then
    each earlier number of the agent (`cluster_plan`'s buckets split by them in that order)."""
    picked = np.asarray(rows, dtype=np.int64)
    personas = column_text(shard, "persona", picked, len(picked))
    models = column_text(shard, "model", picked, len(picked))
    history = shard.guesses[picked, : ctx.round - 1]
    return [
        (f"{persona}|{model}", *(repr(float(g)) for g in numbers))
        for persona, model, numbers in zip(personas, models, history, strict=True)
    ]


def report_rows(
    index: int, shard: AgentShard, grouped: ShardPrompts, ctx: RoundContext, tokens: Sequence[int]
) -> pd.DataFrame:
    """Shard `index`'s report of its grouped prompts, `tokens` each chat's prompt tokens."""
    firsts = [int(m[0]) for m in grouped.members]
    return pd.DataFrame(
        {
            "shard": np.full(len(firsts), index, dtype=np.int64),
            "key": [request_key(chat) for chat in grouped.chats],
            "path": prompt_paths(shard, firsts, ctx),
            "tokens": np.asarray(tokens, dtype=np.int64),
            "agents": np.asarray([len(m) for m in grouped.members], dtype=np.int64),
        }
    )


async def shard_report(
    prompts: Prompts, shard: AgentShard, ctx: RoundContext, count: CountTokens
) -> pd.DataFrame:
    """`shard`'s report for round `ctx.round`: its distinct prompts (`Prompts.grouped`, no model)
    and their prompt tokens as `count` gives them."""
    grouped = prompts.grouped(shard, ctx)
    tokens = await count(grouped.chats)
    return report_rows(shard.index, shard, grouped, ctx, tokens)
