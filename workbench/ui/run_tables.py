"""What the launcher shows of a run, as tables: shards, rounds, recent launches.

The tables are built from a RunState (the run's own events, kept current by
`workbench.runs.follower.RunFollower`), so a page shows what the run reported, the same whether
it started here or anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from workbench.results.round_table import ROUND_TABLE
from workbench.results.run_statuses import UNKNOWN
from workbench.runs.shards import shown_state
from workbench.runtime.events import RunState, round_note

if TYPE_CHECKING:
    from workbench.runs.launch_states import LaunchState

__all__ = [
    "LAUNCH_COLUMNS",
    "ROUND_FORMATS",
    "SHARD_COLUMNS",
    "launches_table",
    "round_table",
    "shard_table",
]

ROUND_FORMATS: dict[str, str] = {
    "mean": "0.00",
    "median": "0.00",
    "target": "0.00",
    "winning": "0.[00]",
    "seconds": "0.0",
}
"""How the page shows the round table's numbers (numbro formats): statistics to 2 decimals, a
winning guess as it was given (up to 2), seconds to 0.1. The frame keeps the exact values."""
SHARD_COLUMNS = ("shard", "round", "node", "agents", "answered", "state", "errors", "tokens")
"""The per-shard progress table's columns."""
LAUNCH_COLUMNS = ("launch_id", "started_at", "status", "rounds", "bundle", "error")
"""The recent-launches table's columns."""


def shard_table(state: RunState | None) -> pd.DataFrame:
    """Each shard's latest progress: shard, round, node, agents, answered, state (see
    `shown_state`), errors (count by kind, e.g. "timeout: 2"), tokens (prompt + completion)."""
    rows = []
    status = state.true_status if state else UNKNOWN  # once per table, not per shard
    for shard, progress in sorted((state.shards if state else {}).items()):
        errors = ", ".join(f"{kind}: {n}" for kind, n in sorted(progress.errors.items()))
        rows.append(
            {
                "shard": shard,
                "round": progress.round,
                "node": progress.node or "",
                "agents": progress.agents,
                "answered": progress.answered,
                "state": shown_state(progress.state, status),
                "errors": errors,
                "tokens": progress.prompt_tokens + progress.completion_tokens,
            }
        )
    return pd.DataFrame(rows, columns=list(SHARD_COLUMNS))


def round_table(state: RunState | None) -> pd.DataFrame:
    """One row per finished round from its RoundFinished statistics, with a note a round must
    not hide ("no valid answers", "3 failed")."""
    rows = [
        {
            **{header: stats.get(name) for header, name in ROUND_TABLE.items()},
            "note": round_note(stats),
        }
        for stats in (state.stats if state else [])
    ]
    return pd.DataFrame(rows, columns=[*ROUND_TABLE, "note"])


def launches_table(
    states: Iterable[LaunchState], current: LaunchState | None = None
) -> pd.DataFrame:
    """Launches as rows: id, start, status, rounds done / rounds, bundle folder name, error.
    The launch the page follows is shown as `current`, the state its header shows, so the
    table never says "running" beside a header that says "complete"."""
    mine = current.launch_id if current is not None else None
    if mine is not None:
        states = [current if s.launch_id == mine else s for s in states]  # type: ignore[misc]
    rows = [
        {
            "launch_id": s.launch_id or "",
            "started_at": s.launch.started_at if s.launch else "",
            "status": s.status,
            "rounds": f"{s.rounds_done}/{s.rounds}",
            "bundle": s.bundle.name if s.bundle else "",
            "error": s.error or "",
        }
        for s in states
    ]
    return pd.DataFrame(rows, columns=list(LAUNCH_COLUMNS))
