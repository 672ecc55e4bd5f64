"""A bundle with one round's exact answer distributions, written by hand (no model needed): the
exact views, the exact group table and the Results tab's Exact view are tested on it.

Three occupations of 20 agents each answer three distinct prompts whose laws (EXACT_LAWS) give
mass to a few answers only, with none between (3 to 99 for the nurses): what the exact curve
must draw as zero. The config is an LLM run on the embedded model, so `bench noise` can measure
the numerics of its prompts when a test has the model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from run_configs import run_config

from workbench.config import RunConfig
from workbench.game import round_stats
from workbench.results import Bundle, BundleWriter
from workbench.results.exact_store import AGENTS_SCHEMA, PROMPTS_SCHEMA

EXACT_LAWS: tuple[dict[int, float], ...] = (
    {0: 0.1, 2: 0.3, 100: 0.6},  # mass at the edge, none from 3 to 99
    {10: 0.5, 11: 0.3, 100: 0.2},
    {20: 0.25, 21: 0.25, 33: 0.5},
)
"""The answer laws of the bundle's three distinct prompts (answer: probability)."""

EXACT_GROUPS: dict[str, int] = {"nurse": 0, "engineer": 1, "teacher": 2}
"""The bundle's occupations and the prompt each one's agents answered."""

PER_GROUP = 20
"""Agents per occupation."""


def exact_config(name: str = "exact") -> RunConfig:
    """One round of 60 LLM agents on the embedded model, keeping exact distributions, over a
    population of the three occupations and two genders."""
    third = {job: "1/3" for job in EXACT_GROUPS}
    population = {
        "name": "jobs",
        "dimensions": [
            {"name": "occupation", "shares": third},
            {"name": "gender", "shares": {"female": "1/2", "male": "1/2"}},
        ],
    }
    return run_config(
        population,
        rounds=1,
        name=name,
        seed=3,
        n_agents=PER_GROUP * len(EXACT_GROUPS),
        policy={"kind": "llm"},
        model={"kind": "embedded", "sampling": "workbench"},
        output={"exact_distributions": True},
    )


def write_exact_bundle(root: Path, run_id: str = "exact") -> Bundle:
    """The bundle (see the module) under `root`: answers drawn from EXACT_LAWS, the round's
    exact distributions stored as a run stores them (`BundleWriter.write_exact`)."""
    rng = np.random.default_rng(3)
    jobs = np.repeat(list(EXACT_GROUPS), PER_GROUP)
    prompt_of = np.array([EXACT_GROUPS[j] for j in jobs])
    guesses = np.array(
        [rng.choice(list(EXACT_LAWS[p]), p=list(EXACT_LAWS[p].values())) for p in prompt_of],
        dtype=float,
    )
    ids = np.arange(len(jobs))
    personas = pd.DataFrame(
        {"agent_id": ids, "occupation": jobs, "gender": np.tile(["female", "male"], len(ids) // 2)}
    )
    responses = pd.DataFrame({"agent_id": ids, "guess": guesses, "status": "ok"})
    prompts = pa.table(
        {
            "prompt": [p for p, law in enumerate(EXACT_LAWS) for _ in law],
            "answer": [a for law in EXACT_LAWS for a in law],
            "prob": [q for law in EXACT_LAWS for q in law.values()],
        },
        schema=PROMPTS_SCHEMA,
    )
    agents = pa.table({"agent_id": ids, "prompt": prompt_of}, schema=AGENTS_SCHEMA)
    config = exact_config(run_id)
    with BundleWriter(root, config, run_id=run_id) as writer:
        writer.write_personas(personas)
        writer.write_responses(1, 0, responses)
        stats = round_stats(guesses, np.ones(len(ids), dtype=bool), config.game)
        writer.end_round({"round": 1, **stats.as_dict(), "seconds": 0.0})
        writer.write_exact(1, prompts, agents, {"walk": "by hand (tests/exact_bundle.py)"})
        writer.finish()
    return Bundle.open(root / run_id)
