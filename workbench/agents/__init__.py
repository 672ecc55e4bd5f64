"""Agents as columns: shards of many agents, what LLM agents are asked and how they decide, and
the batch policies that decide for a shard."""

from workbench.agents.policies import LevelKPolicy, LLMPolicy, Policy, RandomPolicy
from workbench.agents.prompts import Prompts, ShardPrompts
from workbench.agents.shard import AgentShard, RoundContext, decisions_table, split_into_shards

__all__ = [
    "AgentShard",
    "LLMPolicy",
    "LevelKPolicy",
    "Policy",
    "Prompts",
    "RandomPolicy",
    "RoundContext",
    "ShardPrompts",
    "decisions_table",
    "split_into_shards",
]
