"""Exact group distributions: what a round's agents drew from, by group, beside what they drew.

In distribution mode each agent's answer is a draw from its own prompt's answer distribution
under the sampling law. Walking each distinct prompt of a bundle's round whole
(`runtime.prompt_walks`, with the agents' memory of earlier rounds restored from the bundle)
gives those distributions exactly, so a group's expected mean and spread are known, not only
sampled, and a difference between groups can be told from sampling noise. The model must be
the one the bundle was played on (the same weights, engine build and settings): the answers are
exact draws for the evaluation it pins, which the bundle's `model` entry records.

    found = exact_round(bundle, model)            # round 1; costs about what round 1 cost
    found.groups("education")    # n, exact_mean, exact_sd, sampled_mean, sampled_sd, z
    found.shares("education")    # each group's exact share of every answer beside the drawn
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from workbench.agents.factory import make_policy
from workbench.agents.policies import LLMPolicy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import LLMPolicySpec
from workbench.errors import ConfigError
from workbench.llm.chat_model import ChatModel
from workbench.population import prompt_note
from workbench.results import Bundle
from workbench.runtime.blocking import run_blocking
from workbench.runtime.prompt_walks import PromptWalks, walk_prompts


@dataclass(frozen=True)
class ExactRound:
    """One round of a bundle: every agent's prompt, each prompt's whole answer distribution
    (answers as integers, probabilities), and the answers the agents drew."""

    round: int
    personas: pd.DataFrame
    prompt_of: np.ndarray
    answers: list[np.ndarray]
    probs: list[np.ndarray]
    drawn: pd.DataFrame

    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Each agent's expected answer and expected square (from its prompt's distribution)."""
        mean = np.array([a @ p for a, p in zip(self.answers, self.probs, strict=True)])
        square = np.array([(a * a) @ p for a, p in zip(self.answers, self.probs, strict=True)])
        return mean[self.prompt_of], square[self.prompt_of]

    def _categories(self, by: str) -> np.ndarray:
        """Each agent's category of persona column `by`, as text."""
        if by not in self.personas:
            raise ConfigError(f"by: {by!r} is not a persona column; one of {list(self.personas)}")
        return self.personas[by].astype(str).to_numpy()

    def _guesses(self) -> np.ndarray:
        """Each agent's drawn guess, in persona order."""
        drawn = self.drawn.set_index("agent_id")["guess"].reindex(self.personas["agent_id"])
        return drawn.to_numpy(dtype=np.float64)

    def groups(self, by: str) -> pd.DataFrame:
        """Per category of persona column `by`: agents, the exact mean and spread of what they
        draw from, the sampled mean and spread, and z, the sampled mean's distance from the
        exact one in standard errors (|z| above about 3 is more than sampling noise)."""
        mean, square = self._moments()
        frame = pd.DataFrame(
            {by: self._categories(by), "mean": mean, "square": square, "guess": self._guesses()}
        )
        rows = []
        for category, part in frame.groupby(by, sort=True):
            n = len(part)
            exact_mean = float(part["mean"].mean())
            exact_sd = float(np.sqrt(max(0.0, part["square"].mean() - exact_mean**2)))
            sampled = part["guess"].dropna()
            sampled_mean = float(sampled.mean()) if len(sampled) else float("nan")
            error = exact_sd / np.sqrt(n) if n else float("nan")
            rows.append(
                {
                    by: category,
                    "n": n,
                    "exact_mean": exact_mean,
                    "exact_sd": exact_sd,
                    "sampled_mean": sampled_mean,
                    "sampled_sd": float(sampled.std(ddof=0)) if len(sampled) else float("nan"),
                    "z": (sampled_mean - exact_mean) / error if error > 0 else float("nan"),
                }
            )
        return pd.DataFrame(rows)

    def shares(self, by: str) -> pd.DataFrame:
        """Per category of `by` and answer: its exact share (the agents' distributions
        averaged) beside the share the agents drew."""
        categories, guesses = self._categories(by), self._guesses()
        rows = []
        for category in sorted(set(categories)):
            mask = categories == category
            counts = np.bincount(self.prompt_of[mask], minlength=len(self.probs))
            exact: dict[int, float] = {}
            for prompt in np.flatnonzero(counts):
                for answer, p in zip(self.answers[prompt], self.probs[prompt], strict=True):
                    exact[int(answer)] = exact.get(int(answer), 0.0) + counts[prompt] * p
            total = int(mask.sum())
            seen = pd.Series(guesses[mask]).dropna().astype(int).value_counts()
            for answer in sorted(set(exact) | set(seen.index)):
                rows.append(
                    {
                        by: category,
                        "answer": answer,
                        "exact_share": exact.get(answer, 0.0) / total,
                        "sampled_share": float(seen.get(answer, 0)) / total,
                    }
                )
        return pd.DataFrame(rows)


async def aexact_round(bundle: Bundle | str, model: ChatModel, round_number: int = 1) -> ExactRound:
    """Walk every distinct prompt of a bundle's round whole on `model` (see the module)."""
    opened = bundle if isinstance(bundle, Bundle) else Bundle.open(bundle)
    cfg = opened.config
    if not isinstance(cfg.policy, LLMPolicySpec) or cfg.models:
        raise ConfigError(
            "exact distributions are for a run of one LLM model (policy kind llm, no models mix)"
        )
    if not 1 <= round_number <= opened.rounds_count:
        raise ConfigError(
            f"round: {round_number} is not a finished round of {opened.run_id} "
            f"(1 to {opened.rounds_count})"
        )
    policy = make_policy(cfg, model)
    assert isinstance(policy, LLMPolicy)
    personas = opened.personas()
    shard = AgentShard(0, personas, cfg.game.rounds)
    responses = opened.responses()
    shard.restore(responses[responses["round"] < round_number])
    targets = tuple(float(t) for t in opened.rounds()["target"].iloc[: round_number - 1])
    note = prompt_note(cfg)
    game = opened.game_of(round_number)
    ctx = RoundContext(round_number, cfg.seed, game, cfg.n_agents, targets, note)
    found: PromptWalks = await walk_prompts(policy, shard, ctx)
    answers = [np.array([int(a) for a in w.answers], dtype=np.float64) for w in found.walks]
    probs = [np.array(list(w.answers.values()), dtype=np.float64) for w in found.walks]
    drawn = responses[responses["round"] == round_number][["agent_id", "guess"]]
    return ExactRound(round_number, personas, found.codes, answers, probs, drawn)


def exact_round(bundle: Bundle | str, model: ChatModel, round_number: int = 1) -> ExactRound:
    """Blocking `aexact_round` (in Jupyter, on a helper thread)."""
    return run_blocking(aexact_round(bundle, model, round_number))
