"""A round's exact answer distributions: walk each distinct prompt of a bundle's round whole.

`runtime.prompt_walks` walks the round's prompts with the agents' memory of earlier rounds
restored from the bundle, so every agent's answer distribution is known (`results.exact_store`). The
model must be the one the bundle was played on (the same weights, engine build and settings):
the answers are exact draws for the evaluation it pins, which the bundle's `model` entry records.
A run with `output.exact_distributions` stores each round's as it ends (`store_exact`);
`exact_round` computes any round of any distribution-mode bundle afterwards.

    found = exact_round(bundle, model)            # round 1; costs about what round 1 cost
    found.groups("education")    # n, exact_mean, exact_sd, sampled_mean, sampled_sd, z
    found.shares("education")    # each group's exact share of every answer beside the drawn
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.config import LLMPolicySpec, RunConfig
from workbench.errors import ConfigError
from workbench.llm import sampling_params
from workbench.llm.chat_model import ChatModel
from workbench.results import Bundle, BundleWriter
from workbench.results.exact_store import EXACT_VERSION, ExactRound
from workbench.runtime.blocking import run_blocking
from workbench.runtime.prompt_walks import PromptWalks, bundle_round, walk_prompts

__all__ = [
    "ExactRound",
    "aexact_round",
    "exact_of",
    "exact_round",
    "require_exact_rounds",
    "store_exact",
]


def require_exact_rounds(cfg: RunConfig, model: ChatModel | None = None) -> None:
    """ConfigError unless exact distributions can be had for `cfg`'s runs: one LLM model (no
    mix) whose constrained answers are drawn in distribution mode (checked when `model` is
    given)."""
    fix = "set output.exact_distributions: false"
    if not isinstance(cfg.policy, LLMPolicySpec) or cfg.models:
        raise ConfigError(
            f"exact distributions are for a run of one LLM model (policy kind llm, no models "
            f"mix); {fix}"
        )
    if model is not None and (model.node_scorer() is None or not cfg.model.constrained):
        raise ConfigError(
            "model.sampling: exact distributions need distribution mode (sampling auto or "
            f"workbench on a model that supports it, constrained answers); or {fix}"
        )


def exact_of(
    walks: PromptWalks, round_number: int, personas: pd.DataFrame, drawn: pd.DataFrame
) -> ExactRound:
    """A round's whole walks (`walk_prompts`) as an `ExactRound` beside what was `drawn`
    (agent_id, guess)."""
    answers = [np.array([int(a) for a in w.answers], dtype=np.float64) for w in walks.walks]
    probs = [np.array(list(w.answers.values()), dtype=np.float64) for w in walks.walks]
    return ExactRound(round_number, personas, walks.codes, answers, probs, drawn)


async def aexact_round(bundle: Bundle | str, model: ChatModel, round_number: int = 1) -> ExactRound:
    """Walk every distinct prompt of a bundle's round whole on `model` (see the module)."""
    opened = bundle if isinstance(bundle, Bundle) else Bundle.open(bundle)
    cfg = opened.config
    require_exact_rounds(cfg)
    if not 1 <= round_number <= opened.rounds_count:
        raise ConfigError(
            f"round: {round_number} is not a finished round of {opened.run_id} "
            f"(1 to {opened.rounds_count})"
        )
    model.load()
    responses = opened.responses()
    shard, ctx = bundle_round(opened, round_number, responses)
    scorer = model.node_scorer()
    params = sampling_params(cfg.model)
    found: PromptWalks = await walk_prompts(Prompts.of(cfg), shard, ctx, scorer, params)
    drawn = responses[responses["round"] == round_number][["agent_id", "guess"]]
    return exact_of(found, round_number, shard.personas, drawn)


def exact_round(bundle: Bundle | str, model: ChatModel, round_number: int = 1) -> ExactRound:
    """Blocking `aexact_round` (in Jupyter, on a helper thread)."""
    return run_blocking(aexact_round(bundle, model, round_number))


async def store_exact(writer: BundleWriter, model: ChatModel, round_number: int) -> ExactRound:
    """Walk a just-ended round of the bundle `writer` writes and store its exact distributions
    there (exact/round-<k>/), with how they were computed in the manifest's `exact` entry."""
    found = await aexact_round(Bundle.open(writer.path), model, round_number)
    prompts, agents = found.tables()
    identity: dict[str, Any] = model.identity
    scheme = {
        "walk": EXACT_VERSION,
        "evaluation": identity.get("prompt_pieces"),
        "sampling": identity.get("sampling"),
    }
    writer.write_exact(round_number, prompts, agents, scheme)
    return found
