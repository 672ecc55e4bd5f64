"""Result bundles read back: `Bundle` (manifest, config, tables, events) and `list_bundles`.

A finished bundle is read through its manifest: only the files it lists, so a file dropped in
afterwards is never mistaken for data. While the run is live (no file list yet) the reader
takes what is there. A symbolic link inside a bundle is refused, never followed. Every
Parquet file is readable with pandas, pyarrow, polars or duckdb alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench.config import GameSpec, RunConfig, validate
from workbench.errors import BundleError, ConfigError, WorkbenchError
from workbench.results.exact_store import ExactRound, from_tables
from workbench.results.html import bundle_html, damaged_html
from workbench.results.layout import (
    ENGINE_WORK,
    ENGINE_WORK_FIELDS,
    EVENTS_FILE,
    EXACT_DIR,
    FIGURES_DIR,
    GROUPS_FILE,
    MANIFEST,
    PERSONAS_FILE,
    RESPONSE_SCHEMA,
    RESPONSES_DIR,
    ROUNDS_FILE,
    SCHEMA_VERSION,
    bundle_file,
    conform,
    exact_paths,
    is_symlink_error,
    parse_part_path,
    read_parquet,
    relative,
    walk,
    with_later_stats,
)
from workbench.results.run_statuses import MANIFEST_STATUSES, UNKNOWN, RunStatus

BUNDLE_COLUMNS: tuple[str, ...] = (
    "run_id",
    "status",
    "model",
    "created_at",
    "n_agents",
    "rounds_done",
    "fork_of",
    "path",
)
"""A bundle's row, the one list of its columns: `model` what answered (`model_label`), `fork_of`
a fork's parent and the round it starts at (`fork_label`). The results picker shows them;
`list_bundles` adds `problem`, `runs.list_runs` the launch."""

LIST_COLUMNS: tuple[str, ...] = (*BUNDLE_COLUMNS, "problem")
"""Columns of `list_bundles`' table: a bundle's row and `problem` (why a field reads UNKNOWN;
else None)."""


def _not_a_bundle(path: Path, why: str) -> BundleError:
    return BundleError(f"{path / MANIFEST}: not a result bundle ({why})")


_KIND_NAMES = {
    str: "a string",
    dict: "an object",
    list: "a list",
    int: "an integer",
    bool: "a boolean",
}


def read_events(path: str | Path, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The complete event lines of events.jsonl from byte `offset`, and the offset after them.

    `path` is a bundle folder or the events file itself. A missing file gives no events; a
    partial last line (a live writer mid-append) is left for the next call. A follower polls
    with the offset it got back, reading each line once.
    """
    if offset < 0:
        raise ValueError(f"offset must be >= 0, got {offset}")
    path = Path(path)
    file = path / EVENTS_FILE if path.is_dir() else path
    if file.is_symlink():
        raise is_symlink_error(file)
    try:
        with file.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except FileNotFoundError:
        return [], offset
    except OSError as exc:
        raise BundleError(f"{file}: cannot read the events ({exc})") from None
    end = data.rfind(b"\n") + 1
    events = []
    start = offset
    for line in data[:end].split(b"\n")[:-1]:
        if line.strip():
            try:
                event = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise BundleError(
                    f"{file}: the line at byte {start} is not JSON ({exc}); the bundle is "
                    "damaged - rerun or restore it"
                ) from None
            if not isinstance(event, dict):
                raise BundleError(f"{file}: the line at byte {start} is not a JSON object")
            events.append(event)
        start += len(line) + 1
    return events, offset + end


class Bundle:
    """A result bundle read back from disk: its manifest, config, tables and events."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest

    @classmethod
    def open(cls, path: str | Path) -> Bundle:
        """Open the bundle at `path`; BundleError in one line when it is not one."""
        path = Path(path)
        if not path.is_dir():
            raise _not_a_bundle(path, "no such directory")
        file = path / MANIFEST
        if file.is_symlink():
            raise is_symlink_error(file)
        if not file.is_file():
            raise _not_a_bundle(path, "manifest.json is missing")
        try:
            manifest = json.loads(file.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _not_a_bundle(path, f"invalid JSON: {exc}") from None
        if not isinstance(manifest, dict):
            raise _not_a_bundle(path, f"expected a JSON object, got {type(manifest).__name__}")
        version = manifest.get("schema_version")
        if version != SCHEMA_VERSION:
            raise _not_a_bundle(path, f"schema_version {version!r}, expected {SCHEMA_VERSION}")
        for key in ("run_id", "status", "config"):
            if key not in manifest:
                raise _not_a_bundle(path, f"no {key!r} key")
        return cls(path, manifest)

    # ------------------------------------------------------------------ manifest fields

    def _damaged(self, name: str, want: str, got: str) -> BundleError:
        """The one-line error for a manifest field of the wrong type or value (naming the
        field in `field` and `detail`, so a listing can show it beside the bundle)."""
        detail = f"must be {want}, got {got}"
        error = BundleError(
            f"{self.path / MANIFEST}: field {name!r} {detail}; the bundle is damaged - rerun or "
            "restore it"
        )
        error.field, error.detail = name, detail
        return error

    def _field(self, name: str, kind: type, *, default: Any = None, optional: bool = False) -> Any:
        """A manifest field checked to be of `kind` (None allowed when `optional`)."""
        value = self.manifest.get(name, default)
        if value is None and optional:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            want = _KIND_NAMES.get(kind, kind.__name__) + (" or null" if optional else "")
            raise self._damaged(name, want, type(value).__name__)
        return value

    @property
    def run_id(self) -> str:
        """The run id."""
        return str(self._field("run_id", str))

    @property
    def recorded_status(self) -> RunStatus:
        """The status the manifest records: running, complete, failed or cancelled (running
        after a killed run too; `status` tells that one from a live run)."""
        value = self.manifest.get("status")
        if value not in MANIFEST_STATUSES:
            raise self._damaged("status", f"one of {', '.join(MANIFEST_STATUSES)}", repr(value))
        return RunStatus(value)

    @property
    def status(self) -> RunStatus:
        """The run's status now (`results.current_status.run_status`): running, complete, failed,
        cancelled, or dead when the manifest reads running but its writer is gone."""
        from workbench.results.current_status import run_status

        return run_status(self.path, self.recorded_status)

    @property
    def is_complete(self) -> bool:
        """Whether the run finished normally."""
        return self.recorded_status is RunStatus.COMPLETE

    @property
    def created_at(self) -> str | None:
        """When the run started (ISO 8601 UTC)."""
        return self._field("created_at", str, optional=True)

    @property
    def finished_at(self) -> str | None:
        """When `finish()` ran, or None while the run is live (or was killed)."""
        return self._field("finished_at", str, optional=True)

    @property
    def is_finished(self) -> bool:
        """Whether the manifest holds its final file list (the writer's `finish()` ran)."""
        return self.finished_at is not None

    @property
    def error(self) -> str | None:
        """What stopped a failed or cancelled run, on one line."""
        return self._field("error", str, optional=True)

    @property
    def resumable(self) -> bool | None:
        """Whether a resume may finish the failed run, as its writer recorded it (False when a
        resume would replay the same prompts); None for a run that did not fail or a bundle
        written before it was recorded (`run_statuses.can_resume` then judges)."""
        return self._field("resumable", bool, optional=True)

    @property
    def model(self) -> dict[str, Any]:
        """What answered: the model's identity, or the baseline policy ({} when unrecorded)."""
        return dict(self._field("model", dict, default={}))

    @property
    def files(self) -> dict[str, Any]:
        """The manifest's data files (path -> rows, sha256, bytes); {} while the run is live."""
        return dict(self._field("files", dict, default={}))

    @property
    def rounds_done(self) -> list[dict[str, Any]]:
        """The manifest's finished rounds, each with at least its integer `round`."""
        rounds = self._field("rounds", list, default=[])
        for entry in rounds:
            number = entry.get("round") if isinstance(entry, dict) else None
            if not isinstance(number, int) or isinstance(number, bool):
                want = "a list of objects with an integer 'round'"
                raise self._damaged("rounds", want, f"an entry {entry!r:.60}")
        return [dict(entry) for entry in rounds]

    @property
    def rounds_count(self) -> int:
        """How many rounds the manifest records as done."""
        return len(self._field("rounds", list, default=[]))

    @cached_property
    def config(self) -> RunConfig:
        """The run's resolved config (secrets redacted), validated."""
        data = self._field("config", dict)
        try:
            return validate(RunConfig, data, f"{self.path / MANIFEST}: config")
        except ConfigError as exc:
            raise BundleError(str(exc)) from None

    @property
    def forked_from(self) -> dict[str, Any] | None:
        """The parent a fork shares its first rounds with (`results.fork`), or None."""
        entry = self._field("forked_from", dict, optional=True)
        return None if entry is None else dict(entry)

    def game_of(self, round_number: int) -> GameSpec:
        """The game a round was played under: the config's, except a fork's shared rounds,
        played under its parent's (recorded in `forked_from.round_games`)."""
        fork = self.forked_from
        if fork is None or round_number >= int(fork.get("at_round", 0)):
            return self.config.game
        games = fork.get("round_games")
        if not isinstance(games, list) or not 1 <= round_number <= len(games):
            raise self._damaged("forked_from", "round_games for every shared round", "none")
        try:
            return validate(GameSpec, games[round_number - 1], "forked_from.round_games")
        except ConfigError as exc:
            raise BundleError(f"{self.path / MANIFEST}: {exc}") from None

    # ------------------------------------------------------------------ data

    def _listed(self, rel: str) -> Path | None:
        """`rel`'s path when the reader may read it (listed, or the run is live), else None."""
        if self.is_finished and rel not in self.files:
            return None
        return bundle_file(self.path, rel)

    def _table(self, rel: str, columns: list[str] | None = None) -> pa.Table:
        """A listed Parquet file's table (only `columns`, when given); BundleError naming it
        when it is not listed."""
        path = self._listed(rel)
        if path is None:
            raise BundleError(f"{self.path / rel}: not listed in the manifest")
        return read_parquet(path, columns)

    def persona_columns(self) -> list[str]:
        """The personas table's columns, read from its Parquet schema: no row is read."""
        path = self._listed(PERSONAS_FILE)
        if path is None:
            raise BundleError(f"{self.path / PERSONAS_FILE}: not listed in the manifest")
        try:
            return list(pq.read_schema(path).names)
        except (OSError, pa.ArrowException) as exc:
            raise BundleError(f"{path}: cannot read the personas' columns ({exc})") from None

    def personas_table(self, columns: list[str] | None = None) -> pa.Table:
        """The personas as an Arrow table, only `columns` when given (a million persona texts
        are not read for a table that leaves them out)."""
        return self._table(PERSONAS_FILE, columns)

    def personas(self) -> pd.DataFrame:
        """The personas table, one row per agent."""
        return self._table(PERSONAS_FILE).to_pandas()

    def groups(self, *, as_written: bool = False) -> pd.DataFrame:
        """Per-round statistics of each group (empty when the run had no `game.group_by`).

        Statistics an older bundle did not record read as 0 (`LATER_STATS`) unless
        `as_written`, which gives the file's own columns and nulls (what verify checks).
        """
        path = self._listed(GROUPS_FILE)
        if path is None or not (path.is_file() or path.is_symlink()):
            return pd.DataFrame()
        table = read_parquet(path)
        return (table if as_written else with_later_stats(table)).to_pandas()

    def rounds(self, *, as_written: bool = False) -> pd.DataFrame:
        """Per-round statistics, one row per finished round (`as_written`: as in `groups`)."""
        table = self._table(ROUNDS_FILE)
        return (table if as_written else with_later_stats(table)).to_pandas()

    def engine_work(self) -> pd.DataFrame:
        """What each model engine did per finished round (`ENGINE_WORK_FIELDS`, one row per round
        and engine); empty when the run recorded none (one engine, or no model in distribution
        mode)."""
        done = {int(r["round"]) for r in self.rounds_done}
        entries = self.manifest.get(ENGINE_WORK)
        rows = [
            {name: row.get(name) for name in ENGINE_WORK_FIELDS}
            for row in (entries if isinstance(entries, list) else [])
            if isinstance(row, dict) and row.get("round") in done
        ]
        return pd.DataFrame(rows, columns=list(ENGINE_WORK_FIELDS))

    def events(self) -> list[dict[str, Any]]:
        """The run's events from events.jsonl, in order ([] when it has none)."""
        path = self._listed(EVENTS_FILE)
        return [] if path is None else read_events(path)[0]

    def _live_parts(self) -> list[str]:
        """Relative paths of the part files on disk (a live run has no file list yet)."""
        base = bundle_file(self.path, RESPONSES_DIR)
        parts = []
        for path in walk(base) if base.is_dir() else []:
            if path.is_symlink():
                raise is_symlink_error(path)
            parts.append(relative(self.path, path))
        return parts

    def response_files(self, round_number: int | None = None) -> list[Path]:
        """The responses part files, of one round or all, in (round, shard) order.

        Once the run is finished, only the part files its manifest lists.
        """
        names = list(self.files) if self.is_finished else self._live_parts()
        keyed = []
        for rel in names:
            key = parse_part_path(rel)
            if key is not None and (round_number is None or key[0] == round_number):
                keyed.append((key, rel))
        return [bundle_file(self.path, rel) for _, rel in sorted(keyed)]

    def responses_table(self, round_number: int | None = None) -> pa.Table:
        """The responses as one Arrow table, sorted by round then agent_id (no pandas)."""
        tables = [conform(read_parquet(p), p) for p in self.response_files(round_number)]
        if not tables:
            return RESPONSE_SCHEMA.empty_table()
        try:
            table = pa.concat_tables(tables, promote_options="permissive")
        except pa.ArrowException as exc:
            raise BundleError(
                f"{self.path / RESPONSES_DIR}: part files do not agree ({exc})"
            ) from None
        return table.sort_by([("round", "ascending"), ("agent_id", "ascending")])

    def responses(self, round_number: int | None = None) -> pd.DataFrame:
        """Every agent's decision in one round (or all rounds), sorted by round then agent_id."""
        return self.responses_table(round_number).to_pandas()

    @property
    def exact_rounds(self) -> list[int]:
        """Rounds whose exact answer distributions the run kept (output.exact_distributions)."""
        entry = self._field("exact", dict, optional=True)
        rounds = [] if entry is None else entry.get("rounds", [])
        if not isinstance(rounds, list) or not all(isinstance(r, int) for r in rounds):
            raise self._damaged(
                "exact", "a list of round numbers under 'rounds'", f"{rounds!r:.60}"
            )
        return sorted(rounds)

    def exact(self, round_number: int = 1) -> ExactRound:
        """One round's exact answer distributions beside the drawn answers (`results.exact_store`):
        `.groups(by)`, `.shares(by)`, `.expected()`, `.answer_shares()`; no model needed."""
        if round_number not in self.exact_rounds:
            kept = self.exact_rounds
            raise BundleError(
                f"{self.path}: round {round_number} has no stored exact distributions "
                f"({'kept for rounds ' + str(kept) if kept else 'the run did not keep them'}); "
                "run with output.exact_distributions: true, or compute them with "
                "workbench.runtime.exact_rounds.exact_round(bundle, model, round)"
            )
        prompts_path, agents_path = (
            relative(self.path, p) for p in exact_paths(self.path, round_number)
        )
        drawn = self.responses(round_number)[["agent_id", "guess"]]
        return from_tables(
            round_number,
            self.personas(),
            drawn,
            self._table(prompts_path),
            self._table(agents_path),
            f"{self.path / EXACT_DIR}/round-{round_number}",
        )

    def figures(self) -> list[Path]:
        """The files in figures/ (saved plots, e.g. by `viz.figure_files.save_figure`), sorted.

        Figures are not data: the manifest does not list them and verify does not hash them
        (they are rebuilt from the data, byte for byte). Hidden files (temp files of a write
        in progress) are left out; a symbolic link is refused (BundleError), never followed.
        """
        base = bundle_file(self.path, FIGURES_DIR)
        found = []
        for path in walk(base) if base.is_dir() else []:
            if path.is_symlink():
                raise is_symlink_error(path)
            hidden = any(part.startswith(".") for part in path.relative_to(base).parts)
            if path.is_file() and not hidden:
                found.append(path)
        return found

    def _repr_html_(self) -> str:
        """A small view for notebooks from the manifest alone (never the responses)."""
        try:
            return bundle_html(
                path=self.path,
                run_id=self.run_id,
                status=self.status,
                error=self.error,
                created_at=self.created_at,
                model=self.model,
                rounds=self.rounds_done,
                config=self.manifest.get("config"),
            )
        except WorkbenchError as exc:
            return damaged_html(self.path, exc)

    def __repr__(self) -> str:
        return f"Bundle({str(self.path)!r}, status={self.manifest.get('status')!r})"


def model_label(model: dict[str, Any]) -> str:
    """A short name of what answered, from a manifest's `model` entry: the model's name, the
    baseline policy (a run no model answered), or the engine ("?" when nothing is recorded)."""
    if model.get("name"):
        return str(model["name"])
    if model.get("policy"):
        return f"{model['policy']} (policy)"
    return str(model.get("engine") or "?")


def fork_label(fork: dict[str, Any] | None) -> str | None:
    """A fork's parent in a few words, "RUN_ID from round K" (`Bundle.forked_from`); None for a
    bundle that is no fork."""
    if not fork:
        return None
    return f"{fork.get('run_id', UNKNOWN)} from round {fork.get('at_round', '?')}"


def _list_row(bundle: Bundle) -> dict[str, Any]:
    """One bundle's row of `list_bundles` (its manifest read once): a damaged field reads
    UNKNOWN and `problem` names it and why, so the bundle is never dropped from the list."""
    problems: list[str] = []

    def read(name: str, value: Callable[[], Any]) -> Any:
        try:
            return value()
        except BundleError as exc:
            problems.append(f"{exc.field or name} {exc.detail or exc}")
            return UNKNOWN

    config = bundle.manifest.get("config")
    row = {
        "run_id": read("run_id", lambda: bundle.run_id),
        "status": read("status", lambda: bundle.status),
        "model": read("model", lambda: model_label(bundle.model)),
        "created_at": read("created_at", lambda: bundle.created_at),
        "n_agents": config.get("n_agents") if isinstance(config, dict) else None,
        "rounds_done": read("rounds", lambda: bundle.rounds_count),
        "fork_of": read("forked_from", lambda: fork_label(bundle.forked_from)),
        "path": str(bundle.path),
    }
    return {**row, "problem": "; ".join(problems) or None}


def _unreadable_row(path: Path, error: BundleError) -> dict[str, Any]:
    """The row of a folder whose manifest.json does not read as a bundle at all."""
    row: dict[str, Any] = dict.fromkeys(LIST_COLUMNS, UNKNOWN)
    return {**row, "n_agents": None, "fork_of": None, "path": str(path), "problem": str(error)}


def list_bundles(root: str | Path) -> pd.DataFrame:
    """One row per bundle under `root` (LIST_COLUMNS); `model` names what answered
    (`model_label`: a policy run says so).

    Every folder with a manifest.json is listed: a field its manifest does not hold readably
    reads UNKNOWN, and `problem` says which and why (a manifest that does not read at all:
    every field). Folders without one (and hidden ones) are not bundles; a missing root gives
    an empty frame.
    """
    rows = []
    root = Path(root)
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        manifest = path / MANIFEST
        if path.name.startswith(".") or not (manifest.exists() or manifest.is_symlink()):
            continue
        try:
            rows.append(_list_row(Bundle.open(path)))
        except BundleError as exc:
            rows.append(_unreadable_row(path, exc))
    frame = pd.DataFrame(rows, columns=list(LIST_COLUMNS))
    return frame.sort_values(["created_at", "run_id"], ignore_index=True) if rows else frame


def latest_bundle(config: RunConfig, root: str | Path) -> Bundle | None:
    """The newest complete bundle under `root` played from `config` (equal field for field),
    or None: what a served notebook shows on each page view instead of playing it again."""
    listed = list_bundles(root)
    for path in reversed(listed.loc[listed["status"] == RunStatus.COMPLETE, "path"].tolist()):
        try:
            bundle = Bundle.open(path)
            if bundle.is_complete and bundle.config == config:
                return bundle
        except WorkbenchError:
            continue  # a damaged bundle is no bundle of this config
    return None
