"""AgentShard: many agents held as columns, with their multi-round memory as compact arrays.

A shard is the unit a backend runs (one per asyncio task locally, one per Ray actor when
distributed). Policies act on a whole shard at once; nothing here loops over agents in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.config import GameSpec, RunConfig
from workbench.population import prompt_note


@dataclass(frozen=True)
class RoundContext:
    """The one small message a round sends to each shard (never one per agent)."""

    round: int
    seed: int
    game: GameSpec
    n_players: int
    previous_targets: tuple[float, ...] = ()
    population_note: str | None = None

    @classmethod
    def of(
        cls,
        config: RunConfig,
        number: int = 1,
        targets: Sequence[float] = (),
        game: GameSpec | None = None,
    ) -> RoundContext:
        """Round `number` of a run of `config` after `targets` (the earlier rounds' winning
        numbers): its seed, game (`game` where a fork changed it), players and population
        note, all from the config; every round a run, an estimate or a probe asks is this."""
        game = game if game is not None else config.game
        note = prompt_note(config)
        return cls(number, config.seed, game, config.n_agents, tuple(targets), note)

    @property
    def previous_target(self) -> float | None:
        """Last round's target (the winning number), None in round 1."""
        return self.previous_targets[-1] if self.previous_targets else None


@dataclass
class AgentShard:
    """Agents (rows of `personas`, with `agent_id`) and their guesses per round as memory."""

    index: int
    personas: pd.DataFrame
    rounds: int
    guesses: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.personas = self.personas.reset_index(drop=True)
        self.guesses = np.full((len(self.personas), self.rounds), np.nan)

    @property
    def agent_ids(self) -> np.ndarray:
        """The shard's agent ids (int64)."""
        return self.personas["agent_id"].to_numpy(dtype=np.int64)

    def __len__(self) -> int:
        return len(self.personas)

    def remember(self, round_number: int, decisions: pa.Table) -> None:
        """Store a round's guesses (nan where invalid) as this shard's agents' memory."""
        guesses = decisions.column("guess").to_numpy(zero_copy_only=False)
        valid = pc.equal(decisions.column("status"), "ok").to_numpy(zero_copy_only=False)
        self.guesses[:, round_number - 1] = np.where(valid, guesses, np.nan)

    def restore(self, responses: pd.DataFrame) -> None:
        """Reload memory of finished rounds from a bundle's responses (a resumed run)."""
        index = pd.Index(self.agent_ids)
        for round_number, rows in responses.groupby("round"):
            position = index.get_indexer(rows["agent_id"])
            found = position >= 0
            valid = (rows["status"] == "ok").to_numpy()[found]
            guesses = rows["guess"].to_numpy(dtype=np.float64)[found]
            self.guesses[position[found], int(round_number) - 1] = np.where(valid, guesses, np.nan)

    def forget_after(self, completed_rounds: int) -> None:
        """Drop memory of rounds after `completed_rounds` (a replayed or resumed round)."""
        self.guesses[:, completed_rounds:] = np.nan


def split_into_shards(
    personas: pd.DataFrame, agents_per_shard: int, rounds: int
) -> list[AgentShard]:
    """Cut a personas table into shards of at most `agents_per_shard` consecutive agents."""
    if agents_per_shard < 1:
        raise ValueError(f"agents_per_shard must be >= 1, got {agents_per_shard}")
    starts = range(0, len(personas), agents_per_shard)
    return [
        AgentShard(i, personas.iloc[start : start + agents_per_shard], rounds)
        for i, start in enumerate(starts)
    ]


def decisions_table(
    agent_ids: np.ndarray,
    round_number: int,
    guesses: np.ndarray,
    statuses: np.ndarray | str,
    raw: list[str | None] | None = None,
    latency_s: np.ndarray | float = 0.0,
    prompt_tokens: np.ndarray | int = 0,
    completion_tokens: np.ndarray | int = 0,
    extracted: np.ndarray | bool | None = None,
) -> pa.Table:
    """One shard's decisions for a round in the bundle's responses layout (scalars broadcast).

    `extracted`: whether the paper's extraction call decided each guess (None: False for all).
    """
    n = len(agent_ids)

    def full(value: np.ndarray | float | int | bool, dtype: type) -> np.ndarray:
        return np.broadcast_to(np.asarray(value, dtype=dtype), (n,))

    status_col = (
        pa.DictionaryArray.from_arrays(
            pa.array(np.zeros(n, dtype=np.int32)), pa.array([statuses])
        ).cast(pa.string())
        if isinstance(statuses, str)
        else pa.array(statuses, type=pa.string())
    )
    return pa.table(
        {
            "agent_id": pa.array(np.asarray(agent_ids, dtype=np.int64)),
            "round": pa.array(full(round_number, np.int32)),
            "guess": pa.array(np.asarray(guesses, dtype=np.float64)),
            "status": status_col,
            "raw": pa.nulls(n, pa.string()) if raw is None else pa.array(raw, type=pa.string()),
            "latency_s": pa.array(full(latency_s, np.float64)),
            "prompt_tokens": pa.array(full(prompt_tokens, np.int32)),
            "completion_tokens": pa.array(full(completion_tokens, np.int32)),
            "extracted": pa.array(full(False if extracted is None else extracted, np.bool_)),
        }
    )
