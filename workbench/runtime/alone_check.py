"""Check that distribution mode changed no answer: a bundle's answers against each agent alone.

`check_alone(bundle, model)` is what `workbench bench scale` prints as its `exact` verdict.

For the first agents of a finished distribution-mode bundle on the embedded model, every round's
prompt is rebuilt per agent (`Prompts.chats`, from the bundle's personas and the agent's own
recorded guesses), evaluated from a cleared context and drawn with the same sampler and the agent's
own uniforms (`llm.distribution.embedded_scorer.reference_answer`). The bundle's raw answer must
equal it, character for character.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.agents import streams
from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.llm import sampling_params
from workbench.llm.base import split_extraction
from workbench.llm.distribution.embedded_scorer import reference_answer
from workbench.llm.distribution.walk import STEP_STREAM
from workbench.llm.llamacpp import LlamaCppModel
from workbench.results.bundle import Bundle


@dataclass
class AloneReport:
    """How many (agent, round) answers were recomputed alone, and those that differ."""

    checked: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        """Whether every checked answer equals its reference (and some were checked)."""
        return self.checked > 0 and not self.mismatches


def check_alone(bundle: Bundle, model: LlamaCppModel, agents: int = 300) -> AloneReport:
    """Recompute the first `agents` agents' answers of every finished round alone (see the
    module docstring); the model must be the one that answered (same file and build)."""
    config = bundle.config
    params = sampling_params(config.model)
    personas = bundle.personas().sort_values("agent_id").head(agents)
    rounds = bundle.rounds()
    shard = AgentShard(0, personas, config.game.rounds)
    responses = bundle.responses()
    shard.restore(responses)
    recorded = responses.set_index(["agent_id", "round"])["raw"]
    prompts = Prompts.of(config)
    report = AloneReport()
    targets = rounds.sort_values("round")["target"].tolist()
    for number in sorted(int(r) for r in rounds["round"]):
        ctx = RoundContext.of(config, number, targets[: number - 1])
        for request in prompts.chats(shard, ctx):
            agent = int(request.agent_id or 0)
            ids = np.array([agent], dtype=np.int64)

            def uniform(depth: int, ids: np.ndarray = ids, number: int = number) -> float:
                return float(streams.uniform(config.seed, ids, number, STEP_STREAM + depth)[0])

            want = reference_answer(model, request, params, uniform)
            got = split_extraction(str(recorded.get((agent, number), "")))[0]
            report.checked += 1
            if got != want:
                report.mismatches.append(
                    {"agent_id": agent, "round": number, "bundle": got, "alone": want}
                )
    return report
