"""Check a result bundle against itself: status, file hashes and row counts, round statistics.

`verify_bundle` never raises for a damaged or tampered bundle: it lists what is wrong, so a
reader can tell an honest, complete run from one that was killed, edited or only half copied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench._files import sha256_file
from workbench.config import GameSpec, RunConfig, read_yaml, validate
from workbench.errors import BundleError, ConfigError
from workbench.game.rules import FAILED_STATUSES, ROUND_STAT_FIELDS, round_stats
from workbench.results.bundle import Bundle
from workbench.results.layout import (
    CONFIG_FILE,
    LATER_STATS,
    RESPONSES_DIR,
    data_files,
    file_rows,
    is_round_dir,
    relative,
    round_of_dir,
    symlinks,
)
from workbench.results.run_statuses import RunStatus, resume_command

STAT_FIELDS: tuple[str, ...] = ROUND_STAT_FIELDS
"""rounds.parquet columns that verify recomputes from the responses (game's statistics)."""

REL_TOL = 1e-9
ABS_TOL = 1e-9


@dataclass
class VerifyReport:
    """What `verify_bundle` found: ok when there are no problems."""

    path: Path
    ok: bool
    problems: list[str] = field(default_factory=list)
    checked_files: int = 0

    def __str__(self) -> str:
        if self.ok:
            return f"OK {self.path}: {self.checked_files} files and all round statistics verified"
        lines = [f"FAILED {self.path}: {len(self.problems)} problem(s)"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)


def _same(a: Any, b: Any) -> bool:
    """Numbers equal within REL_TOL/ABS_TOL, with nan (or null) equal to nan."""
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return math.isclose(x, y, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _number(value: Any) -> Any:
    """A table cell as a float-able value: null becomes nan."""
    return float("nan") if value is None or value is pd.NA else value


def _check_status(bundle: Bundle, problems: list[str]) -> None:
    if bundle.is_complete:
        return
    status = bundle.status
    if status is RunStatus.RUNNING:
        detail = "finish() never ran: the run is still going"
    elif status is RunStatus.DEAD:
        detail = f"its writer died; resume it with {resume_command(bundle.path)}"
    else:
        detail = bundle.error or "no error recorded"
    problems.append(f"incomplete: status is {status} ({detail})")


def _check_links(bundle: Bundle, problems: list[str]) -> bool:
    """Every symbolic link inside the bundle is a problem (never followed); whether any."""
    links = symlinks(bundle.path)
    for path in links:
        problems.append(
            f"{relative(bundle.path, path)}: is a symbolic link; a bundle holds plain files "
            "only (not followed)"
        )
    return bool(links)


def _check_entry(bundle: Bundle, rel: str, entry: Any, problems: list[str]) -> bool:
    """One listed file's hash, size and rows against the manifest; whether it was checked."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        problems.append(f"{rel}: listed path points outside the bundle")
        return False
    path = bundle.path / rel
    if any((bundle.path / PurePosixPath(*parts[: i + 1])).is_symlink() for i in range(len(parts))):
        return False  # reported by _check_links, never followed
    if not path.is_file():
        problems.append(f"{rel}: listed in the manifest but missing")
        return False
    entry = entry if isinstance(entry, dict) else {}
    size = path.stat().st_size
    if sha256_file(path) != entry.get("sha256"):
        problems.append(
            f"{rel}: sha256 differs from the manifest (changed after the run; "
            f"{size} bytes, manifest says {entry.get('bytes')})"
        )
    elif size != entry.get("bytes"):
        problems.append(f"{rel}: {size} bytes, manifest says {entry.get('bytes')}")
    try:
        rows = file_rows(path)
    except (pa.ArrowException, OSError) as exc:
        problems.append(f"{rel}: not a readable Parquet file ({exc})")
        return True
    if rows != entry.get("rows"):
        problems.append(f"{rel}: {rows} rows, manifest says {entry.get('rows')}")
    return True


def _check_files(bundle: Bundle, problems: list[str]) -> int:
    """Hashes, sizes and row counts of listed files; data files the manifest does not list."""
    files = bundle.manifest.get("files")
    if not isinstance(files, dict):
        problems.append("manifest: 'files' is not a mapping of paths")
        return 0
    checked = sum(_check_entry(bundle, rel, entry, problems) for rel, entry in files.items())
    if bundle.is_finished:
        for path in data_files(bundle.path):
            rel = relative(bundle.path, path)
            if rel not in files:
                where = "data file" if rel.startswith(f"{RESPONSES_DIR}/") else "file"
                problems.append(f"{rel}: {where} not listed in the manifest")
    return checked


def _check_config(bundle: Bundle, problems: list[str]) -> RunConfig | None:
    """The manifest's config is valid and config.yaml holds the same config."""
    try:
        config = bundle.config
    except BundleError as exc:
        problems.append(f"manifest config is invalid: {exc}")
        return None
    try:
        saved = validate(RunConfig, read_yaml(bundle.path / CONFIG_FILE), CONFIG_FILE)
    except ConfigError as exc:
        problems.append(f"{CONFIG_FILE}: {exc}")
    else:
        if saved != config:
            problems.append(f"{CONFIG_FILE}: differs from the config in the manifest")
    return config


def _check_rounds(bundle: Bundle, config: RunConfig | None, problems: list[str]) -> None:
    """rounds.parquet against the manifest and against statistics recomputed from responses."""
    try:
        rounds = bundle.rounds(as_written=True)
    except BundleError as exc:
        problems.append(str(exc))
        return
    if len(rounds) != bundle.rounds_count:
        problems.append(
            f"manifest lists {bundle.rounds_count} round(s), rounds.parquet has {len(rounds)}"
        )
    if "round" not in rounds.columns:
        problems.append("rounds.parquet: no 'round' column")
        return
    listed = {int(r) for r in rounds["round"].dropna()}
    responses_dir = bundle.path / RESPONSES_DIR
    for folder in sorted(responses_dir.iterdir()) if responses_dir.is_dir() else []:
        if is_round_dir(folder) and round_of_dir(folder) not in listed and bundle.is_complete:
            problems.append(
                f"responses for round {round_of_dir(folder)} but no row in rounds.parquet"
            )
    if config is None:
        return
    for row in rounds.to_dict("records"):
        if pd.isna(row["round"]):
            problems.append("rounds.parquet: a row has no round number")
            continue
        number = int(row["round"])
        try:
            responses = bundle.responses(number)
        except BundleError as exc:
            problems.append(f"round {number}: {exc}")
            continue
        missing = {"agent_id", "round", "guess", "status"} - set(responses.columns)
        if missing:
            problems.append(f"round {number}: responses lack column(s) {sorted(missing)}")
            continue
        where = f"rounds.parquet round {number}"
        if responses["agent_id"].duplicated().any():
            problems.append(f"round {number}: some agent_id answered more than once")
        if len(responses) and not (responses["round"] == number).all():
            problems.append(f"round {number}: response rows carry another round number")
        if len(responses) != config.n_agents:
            problems.append(
                f"round {number}: {len(responses)} responses, config n_agents is {config.n_agents}"
            )
        masks = _masks(responses)
        game = bundle.game_of(number)  # a fork's shared rounds: its parent's game
        expected = round_stats(masks["guesses"], masks["valid"], game, **_counted(masks))
        _compare(row, expected.as_dict(), where, problems)
        if game.group_by is not None:
            _check_groups(bundle, game, number, responses, masks, problems)


def _masks(responses: pd.DataFrame) -> dict[str, np.ndarray]:
    """One round's responses as the arrays round_stats takes: guesses, and the valid, failed
    and (when the responses have the column) extracted masks."""
    status = responses["status"]
    masks = {
        "guesses": pd.to_numeric(responses["guess"], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        ),
        "valid": (status == "ok").fillna(False).to_numpy(dtype=bool),
        "failed": status.isin(FAILED_STATUSES).to_numpy(dtype=bool),
    }
    if "extracted" in responses.columns:
        masks["extracted"] = responses["extracted"].eq(True).to_numpy(dtype=bool)  # null: no
    return masks


def _counted(masks: dict[str, np.ndarray], pick: np.ndarray | None = None) -> dict[str, Any]:
    """round_stats' `failed` and `extracted` arguments from `_masks` (rows `pick`, or all)."""
    return {
        name: masks[name] if pick is None else masks[name][pick]
        for name in ("failed", "extracted")
        if name in masks
    }


def _compare(row: dict, expected: dict, where: str, problems: list[str]) -> None:
    """Every statistic of a stored row against its recomputed value; a later statistic
    (`LATER_STATS`) that an older bundle did not record is not a problem."""
    for name in STAT_FIELDS:
        if name in LATER_STATS and (name not in row or pd.isna(row[name])):
            continue
        if name not in row:
            problems.append(f"{where}: no {name!r} column")
        elif not _same(_number(row[name]), expected[name]):
            problems.append(
                f"{where}: {name} is {row[name]!r}, recomputed from responses {expected[name]!r}"
            )


def _check_groups(
    bundle: Bundle,
    game: GameSpec,
    number: int,
    responses: pd.DataFrame,
    masks: dict[str, np.ndarray],
    problems: list[str],
) -> None:
    """groups.parquet's rows of one round against statistics recomputed per group."""
    column = game.group_by
    stored = bundle.groups(as_written=True)
    stored = stored[stored["round"] == number] if len(stored) else stored
    group_of = bundle.personas().set_index("agent_id")[column].astype(str)
    groups = group_of.reindex(responses["agent_id"]).to_numpy()
    names = sorted(set(groups))
    found = sorted(stored["group"].astype(str)) if len(stored) else []
    if found != names:
        problems.append(f"groups.parquet round {number}: groups differ from personas' {column}")
        return
    for row in stored.to_dict("records"):
        mask = groups == str(row["group"])
        guesses, valid = masks["guesses"][mask], masks["valid"][mask]
        expected = round_stats(guesses, valid, game, **_counted(masks, mask))
        where = f"groups.parquet round {number} group {row['group']!r}"
        _compare(row, expected.as_dict(), where, problems)


def _check_exact(bundle: Bundle, problems: list[str]) -> None:
    """Stored exact distributions: readable, one prompt per agent, each prompt's probabilities
    summing to 1 (`Bundle.exact`), and every drawn answer one its prompt gives mass to."""
    done = {int(r["round"]) for r in bundle.rounds_done}
    for number in bundle.exact_rounds:
        where = f"exact round {number}"
        if number not in done:
            problems.append(f"{where}: the round is not finished")
            continue
        try:
            found = bundle.exact(number)
        except BundleError as exc:
            problems.append(f"{where}: {exc}")
            continue
        drawn = found.drawn.set_index("agent_id")["guess"].reindex(found.personas["agent_id"])
        guesses = drawn.to_numpy(dtype=np.float64)
        supported = pd.MultiIndex.from_arrays(
            [
                np.repeat(np.arange(found.n_prompts), [len(a) for a in found.answers]),
                np.concatenate(found.answers),
            ]
        )[np.concatenate(found.probs) > 0]
        seen = ~np.isnan(guesses)
        asked = pd.MultiIndex.from_arrays([found.prompt_of[seen], guesses[seen]])
        outside = np.flatnonzero(~asked.isin(supported))
        if len(outside):
            agent = found.personas["agent_id"].to_numpy()[seen][outside[0]]
            problems.append(
                f"{where}: {len(outside)} drawn answers (agent {agent} first) are ones their "
                "prompt gives no mass"
            )


def verify_bundle(path: str | Path, *, require_complete: bool = True) -> VerifyReport:
    """Recompute a bundle's hashes, row counts and round statistics and report every mismatch.

    `require_complete=False` checks a cancelled or failed bundle's finished rounds without
    counting its status as a problem (what a fork of it shares). Raises BundleError only when
    `path` is not a bundle at all.
    """
    bundle = Bundle.open(path)
    problems: list[str] = []
    checked = 0
    try:
        if require_complete:
            _check_status(bundle, problems)
        linked = _check_links(bundle, problems)
        checked = _check_files(bundle, problems)
        if not linked:  # a bundle holding links is refused: its data is not read through them
            config = _check_config(bundle, problems)
            _check_rounds(bundle, config, problems)
            _check_exact(bundle, problems)
    except (BundleError, pa.ArrowException, OSError, KeyError, TypeError, ValueError) as exc:
        problems.append(f"could not finish checking: {type(exc).__name__}: {exc}")
    problems = list(dict.fromkeys(problems))  # each problem once, in the order found
    return VerifyReport(path=bundle.path, ok=not problems, problems=problems, checked_files=checked)
