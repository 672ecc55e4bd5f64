"""Build the policy a run config asks for, wherever the shard lives (driver or Ray actor)."""

from __future__ import annotations

from workbench.agents.policies import LevelKPolicy, LLMPolicy, Policy, RandomPolicy
from workbench.config import LevelKPolicySpec, RandomPolicySpec, RunConfig
from workbench.llm import ChatModel, model_for, sampling_params


def make_policy(config: RunConfig, model: ChatModel | None = None) -> Policy:
    """The config's policy; LLM policies load their model here (once per process)."""
    spec = config.policy
    if isinstance(spec, RandomPolicySpec):
        return RandomPolicy(spec)
    if isinstance(spec, LevelKPolicySpec):
        return LevelKPolicy(spec)
    model = model if model is not None else model_for(config)
    model.load()
    return LLMPolicy(
        model,
        sampling_params(config.model),
        constrained=config.model.constrained,
        extract_number=spec.extract_number,
    )
