"""Agents as columns: shards of many agents and the batch policies that decide for them."""

from workbench.agents.policies import LevelKPolicy, LLMPolicy, Policy, RandomPolicy
from workbench.agents.shard import AgentShard, RoundContext, decisions_table, split_into_shards

__all__ = [
    "AgentShard",
    "LLMPolicy",
    "LevelKPolicy",
    "Policy",
    "RandomPolicy",
    "RoundContext",
    "decisions_table",
    "split_into_shards",
]
