"""Exact answer distributions of a round: what its agents drew from, beside what they drew.

In distribution mode each agent's answer is a draw from its own prompt's answer distribution
under the sampling law. With every distinct prompt walked whole (`runtime.exact_rounds`), a
group's expected mean and spread are known, not only sampled, so a difference between groups can
be told from sampling noise. A run with `output.exact_distributions` keeps them in its bundle:

    exact/round-<k>/prompts.parquet   prompt, answer, prob (each distinct prompt's distribution)
    exact/round-<k>/agents.parquet    agent_id, prompt (the prompt each agent answered)

and `Bundle.exact(k)` reads them back as an `ExactRound`, with no model needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.errors import BundleError, ConfigError

EXACT_VERSION = "exact/1: every node the law gives mass to, walked whole (distribution.whole_walk)"
"""How the stored distributions were computed; the manifest's `exact.walk`."""

PROMPTS_SCHEMA = pa.schema([("prompt", pa.int32()), ("answer", pa.int32()), ("prob", pa.float64())])
"""exact/round-<k>/prompts.parquet: every answer a prompt gives mass to, and its probability."""

AGENTS_SCHEMA = pa.schema([("agent_id", pa.int64()), ("prompt", pa.int32())])
"""exact/round-<k>/agents.parquet: which distinct prompt each agent answered."""

SUM_TOLERANCE = 1e-9
"""How far a stored prompt's probabilities may sum from 1 (float rounding) before it is damage."""


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

    @property
    def n_prompts(self) -> int:
        """Distinct prompts the round's agents answered."""
        return len(self.probs)

    def expected(self) -> tuple[float, float]:
        """(mean, sd) of a guess drawn by an agent picked at random: the round's exact mean and
        spread, which the sampled ones estimate."""
        mean, square = self._moments()
        m = float(mean.mean())
        return m, float(np.sqrt(max(0.0, float(square.mean()) - m * m)))

    def answer_shares(self) -> pd.DataFrame:
        """Every answer's exact share over all agents beside the share drawn (answer,
        exact_share, sampled_share): the histogram and the distribution it samples."""
        counts = np.bincount(self.prompt_of, minlength=self.n_prompts)
        exact: dict[int, float] = {}
        for prompt in np.flatnonzero(counts):
            for answer, p in zip(self.answers[prompt], self.probs[prompt], strict=True):
                exact[int(answer)] = exact.get(int(answer), 0.0) + counts[prompt] * p
        total = len(self.prompt_of)
        seen = pd.Series(self._guesses()).dropna().astype(int).value_counts()
        answers = sorted(set(exact) | {int(a) for a in seen.index})
        return pd.DataFrame(
            {
                "answer": answers,
                "exact_share": [exact.get(a, 0.0) / total for a in answers],
                "sampled_share": [float(seen.get(a, 0)) / total for a in answers],
            }
        )

    def tables(self) -> tuple[pa.Table, pa.Table]:
        """(prompts, agents): the round as the bundle stores it (see the module)."""
        sizes = [len(p) for p in self.probs]
        prompts = pa.table(
            {
                "prompt": np.repeat(np.arange(self.n_prompts), sizes).astype(np.int32),
                "answer": np.concatenate(self.answers).astype(np.int32),
                "prob": np.concatenate(self.probs).astype(np.float64),
            },
            schema=PROMPTS_SCHEMA,
        )
        agents = pa.table(
            {
                "agent_id": self.personas["agent_id"].to_numpy(dtype=np.int64),
                "prompt": self.prompt_of.astype(np.int32),
            },
            schema=AGENTS_SCHEMA,
        )
        return prompts, agents


def from_tables(
    round_number: int,
    personas: pd.DataFrame,
    drawn: pd.DataFrame,
    prompts: pa.Table,
    agents: pa.Table,
    where: str = "exact",
) -> ExactRound:
    """An `ExactRound` from its stored tables; BundleError naming `where` when they do not
    fit the round (an agent without a prompt, a prompt whose probabilities do not sum to 1)."""
    for table, schema, name in (
        (prompts, PROMPTS_SCHEMA, "prompts"),
        (agents, AGENTS_SCHEMA, "agents"),
    ):
        if not table.schema.equals(schema):
            raise BundleError(
                f"{where}: {name} table has columns {table.schema.names}, not {schema.names}"
            )
    frame = prompts.to_pandas()
    ids = personas["agent_id"].to_numpy(dtype=np.int64)
    owned = agents.to_pandas().set_index("agent_id")["prompt"]
    if len(owned) != len(ids) or not owned.index.isin(ids).all():
        raise BundleError(
            f"{where}: agents table does not list each of the round's {len(ids)} agents once"
        )
    prompt_of = owned.reindex(ids).to_numpy(dtype=np.int64)
    answers: list[np.ndarray] = []
    probs: list[np.ndarray] = []
    for code, part in frame.groupby("prompt", sort=True):
        if int(code) != len(answers):
            raise BundleError(f"{where}: prompt codes are not 0, 1, 2, ... (found {code})")
        p = part["prob"].to_numpy(dtype=np.float64)
        if abs(p.sum() - 1.0) > SUM_TOLERANCE or (p < 0).any():
            raise BundleError(f"{where}: prompt {code}'s probabilities sum to {p.sum()!r}, not 1")
        answers.append(part["answer"].to_numpy(dtype=np.float64))
        probs.append(p)
    if len(prompt_of) and (prompt_of.min() < 0 or prompt_of.max() >= len(probs)):
        raise BundleError(f"{where}: an agent's prompt is not among the {len(probs)} stored")
    return ExactRound(round_number, personas, prompt_of, answers, probs, drawn)
