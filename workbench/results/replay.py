"""A bundle's stored answers, read for the replay model (which sits below results/ in layers).

`llm/replay.py` imports `replay_answers` lazily, the one place llm/ reaches up into results/,
so the replay model reads a bundle exactly as every other reader does: listed files only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from workbench.errors import BundleError
from workbench.results.bundle import Bundle

REPLAY_COLUMNS: tuple[str, ...] = (
    "agent_id",
    "round",
    "raw",
    "status",
    "prompt_tokens",
    "completion_tokens",
)
"""The response columns replay needs to answer each (agent, round) as it was answered."""


@dataclass(frozen=True)
class ReplayAnswers:
    """What a replay needs from a bundle: its run id, the model that answered, the answers."""

    path: Path
    run_id: str
    model: dict[str, Any] = field(default_factory=dict)
    table: pa.Table = field(default_factory=lambda: pa.table({c: [] for c in REPLAY_COLUMNS}))


def replay_answers(path: str | Path) -> ReplayAnswers:
    """The stored answers of the bundle at `path` (REPLAY_COLUMNS); BundleError when unreadable."""
    bundle = Bundle.open(path)
    table = bundle.responses_table()
    missing = [c for c in REPLAY_COLUMNS if c not in table.column_names]
    if missing:
        raise BundleError(f"{bundle.path}: responses lack column(s) {missing} that replay needs")
    return ReplayAnswers(bundle.path, bundle.run_id, bundle.model, table.select(REPLAY_COLUMNS))
