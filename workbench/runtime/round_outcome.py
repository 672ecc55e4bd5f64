"""A round's outcome from its shards' decision tables: the statistics (overall and per group)
and the check that too many failed answers stop the run rather than pass for results."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.config import RunConfig
from workbench.errors import NO_RESUME, RoundFailedError
from workbench.game import FAILED_STATUSES, RoundStats, round_stats
from workbench.llm.base import most_informative
from workbench.results.run_statuses import resume_command

CONTEXT_OVERFLOW = re.compile(r"context (window|length|size)", re.IGNORECASE)
"""A failed answer's error saying its prompt did not fit the model's context (llama.cpp's
"exceed context window", vLLM's "maximum context length", llama.cpp server's "context size")."""

ERROR_TEXT_LIMIT = 400
"""Most characters of a failed answer's error that a RoundFailedError quotes (its fix follows)."""

_FAILED = pa.array(FAILED_STATUSES)


def _extracted(table: pa.Table) -> pa.Array | pa.ChunkedArray:
    """Which decisions the extraction call read (the optional `extracted` column; else none)."""
    if "extracted" not in table.column_names:
        return pa.array(np.zeros(table.num_rows, dtype=bool))
    return pc.fill_null(table.column("extracted").cast(pa.bool_()), False)


def _columns(
    tables: list[pa.Table], column: Callable[[pa.Table], pa.Array | pa.ChunkedArray]
) -> np.ndarray:
    """One per-decision column over every shard's table, as one numpy array."""
    return np.concatenate([column(t).to_numpy(zero_copy_only=False) for t in tables])


def round_outcome(
    tables: list[pa.Table], cfg: RunConfig, groups: tuple[np.ndarray, list[str]] | None = None
) -> tuple[RoundStats, list[dict[str, Any]]]:
    """The round's statistics over every shard's decisions (invalid answers excluded), and each
    group's own (a sub-environment: its mean, its target, its winners) when groups are given."""
    guesses = _columns(tables, lambda t: t.column("guess"))
    valid = _columns(tables, lambda t: pc.equal(t.column("status"), "ok"))
    failed = _columns(tables, lambda t: pc.is_in(t.column("status"), _FAILED))
    extracted = _columns(tables, _extracted)
    per_group: list[dict[str, Any]] = []
    if groups is not None:
        codes_by_agent, names = groups
        codes = codes_by_agent[_columns(tables, lambda t: t.column("agent_id"))]
        for code, name in enumerate(names):
            mask = codes == code
            if mask.any():
                group_stats = round_stats(
                    guesses[mask],
                    valid[mask],
                    cfg.game,
                    failed=failed[mask],
                    extracted=extracted[mask],
                )
                per_group.append({"group": name, **group_stats.as_dict()})
    stats = round_stats(guesses, valid, cfg.game, failed=failed, extracted=extracted)
    return stats, per_group


def check_failures(
    tables: list[pa.Table], number: int, limit: float, bundle: Path, served: bool = True
) -> None:
    """RoundFailedError when more than `limit` of the round's answers failed (model_error or
    timeout): a dead model server must not pass for a round of results.

    The message names the round, the failures by kind, the most telling error (a server's own
    HTTP answer before the refused connections after it) and the fix: for prompts that do not
    fit the model's context a new run (a resume keeps the config and replays the same
    prompts), else the resume command, after restarting the server when the model is `served`.
    """
    n = sum(t.num_rows for t in tables)
    kinds = {
        kind: sum(int(pc.sum(pc.equal(t.column("status"), kind)).as_py() or 0) for t in tables)
        for kind in FAILED_STATUSES
    }
    failed = sum(kinds.values())
    if n == 0 or failed / n <= limit:
        return
    errors: list[str | None] = []
    for t in tables:
        if "raw" in t.column_names:
            raw = t.filter(pc.is_in(t.column("status"), _FAILED)).column("raw")
            errors += pc.unique(raw).to_pylist()  # in order of first appearance
    error = most_informative(errors)
    quoted = " ".join(error.split())[:ERROR_TEXT_LIMIT] if error else "none recorded"
    by_kind = ", ".join(f"{count} {kind}" for kind, count in kinds.items() if count)
    resumable = not (error and CONTEXT_OVERFLOW.search(error))
    if not resumable:
        fix = (
            "the prompts do not fit the model's context: start a new run with a larger "
            f"model.n_ctx (or a server with a longer context); {NO_RESUME}"
        )
    elif served:
        fix = f"start the model server again, then: {resume_command(bundle)}"
    else:
        fix = f"once its cause is fixed: {resume_command(bundle)}"
    raise RoundFailedError(
        f"round {number}: {failed} of {n} answers failed ({by_kind}; {100 * failed / n:.3g}%), "
        f"more than max_failed_share {limit:g} allows; first error: {quoted}; {fix}",
        round_number=number,
        bundle=str(bundle),
        resumable=resumable,
    )
