"""Bundles for the analysis tests: real runs of behavioural policies, and one written by hand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench.config import RunConfig
from workbench.game import round_stats
from workbench.game.rules import FAILED_STATUSES
from workbench.results import Bundle, BundleWriter
from workbench.runtime import Simulation

LEVEL_K = {"kind": "level_k", "noise_sd": 4.0}
"""A behavioural policy for the analysis tests: level-k depths with noise (no model)."""

HAND_EDUCATION = ("high school", "master's degree", "doctoral degree")
"""Categories of the hand-made bundle, in order; every doctoral answer is invalid."""

HAND_GUESSES = (
    # agent_id, education, guess, status
    (0, "high school", 10.0, "ok"),
    (1, "high school", 20.0, "ok"),
    (2, "high school", 40.0, "ok"),
    (3, "high school", 75.5, "ok"),
    (4, "high school", 99.0, "out_of_range"),
    (5, "master's degree", 3.0, "ok"),
    (6, "master's degree", 3.9, "ok"),
    (7, "doctoral degree", float("nan"), "no_number"),
    (8, "doctoral degree", float("nan"), "timeout"),
)


@pytest.fixture
def run_bundle(make_config, tmp_path: Path) -> Callable[..., Bundle]:
    """`run_bundle(policy=..., n_agents=..., ...)`: a real run's bundle (make_config's options)."""

    def run(**options: Any) -> Bundle:
        return Simulation(make_config(**options)).run(out_dir=tmp_path, progress=False)

    return run


@pytest.fixture
def hand_bundle(make_config, tmp_path: Path) -> Bundle:
    """One round of HAND_GUESSES written through the BundleWriter, with "bachelor's degree" a
    category of the personas' education column that no agent has; agent i's answer took 30
    prompt and i + 1 completion tokens, except the timed-out last one (no counts)."""
    ids, education, guesses, status = (list(c) for c in zip(*HAND_GUESSES, strict=True))
    order = ["high school", "bachelor's degree", *HAND_EDUCATION[1:]]
    personas = pd.DataFrame(
        {"agent_id": ids, "education": pd.Categorical(education, categories=order)}
    )
    completion = pd.array([*range(1, len(ids)), None], dtype="Int32")  # the timeout: no count
    responses = pd.DataFrame(
        {
            "agent_id": ids,
            "guess": guesses,
            "status": status,
            "prompt_tokens": pd.array([30] * (len(ids) - 1) + [None], dtype="Int32"),
            "completion_tokens": completion,
        }
    )
    config = make_config(n_agents=len(ids), rounds=1)
    with BundleWriter(tmp_path, config, run_id="hand") as writer:
        writer.write_personas(personas)
        writer.write_responses(1, 0, responses)
        statuses = np.array(status)
        stats = round_stats(
            np.array(guesses),
            statuses == "ok",
            config.game,
            failed=np.isin(statuses, FAILED_STATUSES),
        )
        writer.end_round({"round": 1, **stats.as_dict(), "seconds": 0.0})
        writer.finish()
    return Bundle.open(tmp_path / "hand")


@pytest.fixture(scope="session")
def million_bundle(education_spec, tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    """One round of 1,000,000 level-k agents of the education population (the benchmarks)."""
    config = RunConfig(
        name="million",
        seed=1,
        n_agents=1_000_000,
        population=education_spec,
        policy=LEVEL_K,
        backend={"agents_per_shard": 250_000},
    )
    return Simulation(config).run(out_dir=tmp_path_factory.mktemp("million"), progress=False)
