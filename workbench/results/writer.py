"""`BundleWriter`: writes one run's bundle as the run goes, every file atomically.

The manifest stays at status "running" until `finish()`, so a killed run is visibly incomplete
and never looks complete. One writer per bundle (a lock file with its pid and host); events are
appended to events.jsonl as they happen, and the last one is hashed with the data.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import math
import os
import platform
import secrets
import socket
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workbench import _files
from workbench._version import DISTRIBUTION, __version__
from workbench.config import RunConfig, resolve_population, to_yaml, validate
from workbench.errors import BundleError, ConfigError, ContractError, is_resumable, one_line
from workbench.results import lock
from workbench.results.bundle import Bundle
from workbench.results.layout import (
    CONFIG_FILE,
    ENGINE_WORK,
    ENGINE_WORK_FIELDS,
    EVENTS_FILE,
    EXACT_DIR,
    FIGURES_DIR,
    GROUPS_FILE,
    MANIFEST,
    MANIFEST_KEYS,
    PERSONAS_FILE,
    RESPONSES_DIR,
    ROUNDS_FILE,
    RUN_ID_PATTERN,
    SCHEMA_VERSION,
    as_table,
    data_files,
    exact_paths,
    file_rows,
    is_round_dir,
    part_path,
    plain,
    read_parquet,
    relative,
    response_table,
    round_of_dir,
    rounds_table,
)
from workbench.results.redact import redact
from workbench.results.run_statuses import FINISH_STATUSES, RunStatus, resume_command

if TYPE_CHECKING:
    import pandas as pd

NAME_MAX = 255
"""The longest file name most file systems allow, in bytes, when the system does not say."""


def new_run_id(name: str) -> str:
    """A fresh run id: `<name>-<UTC yyyymmdd-HHMMSS>-<4 hex>`, sortable by start time."""
    return f"{name}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def jsonable(value: Any) -> Any:
    """Plain JSON data (nan/inf become null, paths and times become text) for manifest/events."""
    value = plain(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _now() -> str:
    """The current time as ISO 8601 UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _write_parquet(path: Path, table: pa.Table) -> None:
    """Atomically write an Arrow table as Parquet."""
    _files.atomic_write(path, lambda handle: pq.write_table(table, handle))


def write_frame(frame: pd.DataFrame, path: str | Path) -> Path:
    """Atomically write a DataFrame as .parquet or .csv (by suffix), e.g. a persona set."""
    path = Path(path)
    if path.suffix == ".csv":
        _files.atomic_write_text(path, frame.to_csv(index=False))
    elif path.suffix == ".parquet":
        _write_parquet(path, as_table(frame, str(path)))
    else:
        raise BundleError(f"{path}: use a .parquet or .csv file name")
    return path


def _host() -> dict[str, Any]:
    """Where the run happens: hostname, platform, CPUs, Python implementation."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python_implementation": platform.python_implementation(),
    }


def _versions(given: Mapping[str, Any] | None) -> dict[str, Any]:
    """Versions every bundle records, extended by `given`; the workbench's is recorded once."""
    try:
        pandas = importlib.metadata.version("pandas")
    except importlib.metadata.PackageNotFoundError:
        pandas = None
    versions = {
        "python": platform.python_version(),
        "workbench": __version__,
        "numpy": np.__version__,
        "pandas": pandas,
        "pyarrow": pa.__version__,
    }
    extra = {k: v for k, v in dict(given or {}).items() if k != DISTRIBUTION}
    return versions | extra


def final_status(error: BaseException | None) -> RunStatus:
    """How a run that ended with `error` is marked: complete without one, cancelled for Ctrl-C
    or a cancel, failed otherwise."""
    if error is None:
        return RunStatus.COMPLETE
    if isinstance(error, KeyboardInterrupt | asyncio.CancelledError):
        return RunStatus.CANCELLED
    return RunStatus.FAILED


def _redacted_config(config: RunConfig) -> tuple[dict[str, Any], str]:
    """The config as redacted JSON data and as YAML that loads back into a RunConfig."""
    data = config.model_dump(mode="json")
    clean = redact(data)
    if clean == data:
        return data, to_yaml(config)
    try:
        return clean, to_yaml(validate(type(config), clean, "config"))
    except ConfigError as exc:
        raise BundleError(f"cannot write config.yaml with its secrets redacted: {exc}") from None


def _existing_ancestor(path: Path) -> Path:
    """The nearest of `path` and its parents that exists (or is a link), `path` itself first."""
    probe = path
    while not (probe.exists() or probe.is_symlink()) and probe.parent != probe:
        probe = probe.parent
    return probe


def check_out_dir(root: Path, run_id: str, field: str = "name / run id") -> None:
    """Refuse, before anything is created, a results root that cannot hold the bundle.

    ConfigError when `root` is a file or lies below one, or when `run_id` is longer than the
    file system allows for a folder name.
    """
    found = _existing_ancestor(root)
    if (found.exists() or found.is_symlink()) and not found.is_dir():
        where = "is a file" if found == root else f"lies below {found}, which is a file"
        raise ConfigError(f"--out / output.dir: {root} {where}; choose a folder for the results")
    try:
        limit = os.pathconf(found if found.is_dir() else ".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = NAME_MAX
    size = len(os.fsencode(run_id))
    if size > limit:
        raise ConfigError(
            f"{field}: {run_id[:40]}... is {size} bytes, more than the {limit} this file "
            "system allows for a folder name; use a shorter name"
        )


def check_run_id(run_id: str, root: str | Path, field: str = "run_id") -> None:
    """Refuse, before anything is created, a run id that is not a safe folder name (letters,
    digits, '_', '.', '-', starting with a letter or digit; no longer than the file system
    allows) or whose bundle already exists under `root` (ConfigError naming `field`)."""
    if not RUN_ID_PATTERN.fullmatch(run_id):
        raise ConfigError(
            f"{field}: {run_id!r} is not a safe folder name; use letters, digits, '_', '.' and "
            "'-', starting with a letter or digit"
        )
    root = Path(root)
    check_out_dir(root, run_id, field)
    if (root / run_id).exists() or (root / run_id).is_symlink():
        raise ConfigError(
            f"{field}: {root / run_id} already exists; a bundle is never overwritten, choose "
            f"another run id (or resume it with {resume_command(root / run_id)})"
        )


class BundleWriter:
    """Writes one run's bundle under `root/<run_id>`, atomically, file by file.

    Use as a context manager: an exception marks the bundle failed (KeyboardInterrupt:
    cancelled) and propagates; a clean exit marks it complete unless `finish()` came first.
    """

    def __init__(
        self,
        root: str | Path,
        config: RunConfig,
        *,
        run_id: str | None = None,
        versions: dict | None = None,
        model: dict | None = None,
        seeds: dict | None = None,
    ) -> None:
        if isinstance(config.population, str):
            config = resolve_population(config)
        run_id = run_id if run_id is not None else new_run_id(config.name)
        if not RUN_ID_PATTERN.fullmatch(run_id):
            raise BundleError(
                f"run id {run_id!r}: use letters, digits, '_', '.' and '-', starting with a "
                "letter or digit"
            )
        root = Path(root)
        check_out_dir(root, run_id)
        config_data, config_yaml = _redacted_config(config)
        self._start(root / run_id, run_id)
        root.mkdir(parents=True, exist_ok=True)
        try:
            self._path.mkdir()
        except FileExistsError:
            raise BundleError(
                f"{self._path}: already exists; a bundle is never overwritten, choose another "
                "run id"
            ) from None
        self._lock_path = lock.acquire(self._path, self)
        try:
            (self._path / FIGURES_DIR).mkdir()
            now = _now()
            self._manifest = {
                "schema_version": SCHEMA_VERSION,
                "run_id": run_id,
                "status": RunStatus.RUNNING,
                "created_at": now,
                "updated_at": now,
                "finished_at": None,
                "config": config_data,
                "seeds": {"run": config.seed} | dict(seeds or {}),
                "versions": _versions(versions),
                "model": dict(model or {}),
                "host": _host(),
                "rounds": [],
                "files": {},
                "error": None,
            }
            _files.atomic_write_text(self._path / CONFIG_FILE, config_yaml)
            _write_parquet(self._path / ROUNDS_FILE, rounds_table([]))
            self._write_manifest()
        except BaseException:
            self.close()
            raise

    def _start(self, path: Path, run_id: str) -> None:
        """The state every writer starts with, new or reopened."""
        self._run_id, self._path = run_id, path
        self._finished = False
        self._closed = False
        self._rounds: list[dict[str, Any]] = []
        self._manifest: dict[str, Any] = {}
        self._events = threading.Lock()
        self._lock_path: Path | None = None

    @classmethod
    def reopen(cls, path: str | Path, changes: Mapping[str, Any] | None = None) -> BundleWriter:
        """Continue an unfinished bundle (cancelled, failed or killed) after its last full round.

        Response files and group statistics of a round that never ended are removed, and a
        partial last line of events.jsonl; the manifest goes back to "running" and records
        when the run was resumed, and `changes` (e.g. a new model endpoint) made for it; its
        config stays the one the run started with. A complete bundle, or one another process
        writes, is refused.
        """
        bundle = Bundle.open(path)
        if bundle.is_complete:
            raise BundleError(f"{bundle.path}: already complete; nothing to resume")
        self = cls.__new__(cls)
        self._start(bundle.path, bundle.run_id)
        self._lock_path = lock.acquire(self._path, self)
        try:
            self._resume(Bundle.open(path), changes)  # read again: the lock is ours now
        except BaseException:
            self.close()
            raise
        return self

    def _resume(self, bundle: Bundle, changes: Mapping[str, Any] | None = None) -> None:
        """Drop what a round that never ended left and mark the manifest running again."""
        if bundle.is_complete:
            raise BundleError(f"{bundle.path}: already complete; nothing to resume")
        self._rounds = [dict(r) for r in bundle.rounds_done]
        done = {int(r["round"]) for r in self._rounds}
        self._drop_open_rounds()
        # rounds.parquet and groups.parquet may hold a round the manifest never recorded
        _write_parquet(self._path / ROUNDS_FILE, rounds_table(self._rounds))
        groups = self._path / GROUPS_FILE
        if groups.is_file():
            table = read_parquet(groups)
            rounds = table.column("round")
            kept = table.filter(pc.is_in(rounds, pa.array(sorted(done), rounds.type)))
            if kept.num_rows != table.num_rows:
                _write_parquet(groups, kept)
        self._drop_partial_event()
        manifest = dict(bundle.manifest)
        manifest.pop("resumable", None)  # said of the failure this resume leaves behind
        earlier = manifest.get("resumed")
        earlier = earlier if isinstance(earlier, list) else []
        entry = {"at": _now(), "after_round": len(done)}
        resumed = [*earlier, entry | ({"changes": dict(changes)} if changes else {})]
        manifest.update(
            status=RunStatus.RUNNING, finished_at=None, error=None, files={}, resumed=resumed
        )
        exact = manifest.get("exact")
        if isinstance(exact, dict) and isinstance(exact.get("rounds"), list):
            manifest["exact"] = {**exact, "rounds": [r for r in exact["rounds"] if r in done]}
        self._manifest = manifest
        self._write_manifest()

    def _drop_open_rounds(self) -> None:
        """Remove the part files of rounds that never ended: each shard's part lands as the
        shard ends (a live reader watches the round fill), but a round is kept only whole."""
        done = {int(r["round"]) for r in self._rounds}
        for kept in (RESPONSES_DIR, EXACT_DIR):
            base = self._path / kept
            for folder in base.iterdir() if base.is_dir() else []:
                if is_round_dir(folder) and round_of_dir(folder) not in done:
                    for part in folder.iterdir():
                        part.unlink()
                    folder.rmdir()

    def _drop_partial_event(self) -> None:
        """Cut a half-written last line (a killed process) off events.jsonl before appending."""
        path = self._path / EVENTS_FILE
        if not path.is_file():
            return
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            with path.open("r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
                os.fsync(handle.fileno())

    # ------------------------------------------------------------------ properties

    @property
    def path(self) -> Path:
        """The bundle directory."""
        return self._path

    @property
    def run_id(self) -> str:
        """The run id, which is also the directory name."""
        return self._run_id

    @property
    def status(self) -> str:
        """running until `finish()`, then complete, failed or cancelled."""
        return str(self._manifest["status"])

    @property
    def manifest(self) -> dict[str, Any]:
        """A copy of the manifest as last written."""
        return json.loads(json.dumps(self._manifest))

    # ------------------------------------------------------------------ writing

    def _check_open(self) -> None:
        if self._finished:
            raise BundleError(f"{self._path}: bundle already finished ({self.status})")
        if self._closed:
            raise BundleError(f"{self._path}: writer closed; reopen the bundle to continue")

    def _write_manifest(self) -> None:
        self._manifest["updated_at"] = _now()
        data = redact(jsonable(self._manifest))
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        _files.atomic_write_text(self._path / MANIFEST, text)

    def write_personas(self, df: pd.DataFrame) -> None:
        """Write personas.parquet (one row per agent), replacing an earlier one."""
        self._check_open()
        _write_parquet(self._path / PERSONAS_FILE, as_table(df, PERSONAS_FILE))

    def write_responses(
        self, round_number: int, shard: int, table: pa.Table | pd.DataFrame
    ) -> None:
        """Write one shard's decisions of one round to responses/round-<k>/part-<shard>.parquet.

        Columns are cast to RESPONSE_SCHEMA; BundleError names missing required ones.
        """
        self._check_open()
        if shard < 0 or round_number < 0:
            raise BundleError(f"round and shard must be >= 0, got {round_number} and {shard}")
        data = response_table(table, round_number)
        _write_parquet(part_path(self._path, round_number, shard), data)

    def end_round(self, stats: dict) -> None:
        """Record one finished round's statistics: rewrites rounds.parquet and the manifest.

        `stats` must hold "round" and "seconds"; other keys become extra columns.
        """
        self._check_open()
        missing = [k for k in ("round", "seconds") if k not in stats]
        if missing:
            raise BundleError(f"round statistics must hold {missing}; got {sorted(stats)}")
        entry = {k: plain(v) for k, v in stats.items()}
        if any(r["round"] == entry["round"] for r in self._rounds):
            raise BundleError(f"round {entry['round']} was already ended")
        rounds = [*self._rounds, entry]
        _write_parquet(self._path / ROUNDS_FILE, rounds_table(rounds))
        self._rounds = rounds
        self._manifest["rounds"] = [jsonable(r) for r in rounds]
        self._write_manifest()

    def write_group_stats(self, round_number: int, groups: list[dict[str, Any]]) -> None:
        """Append one round's per-group statistics (sub-environments) to groups.parquet."""
        self._check_open()
        path = self._path / GROUPS_FILE
        earlier = read_parquet(path).to_pylist() if path.is_file() else []
        rows = [r for r in earlier if r["round"] != round_number]
        rows += [{"round": round_number, **{k: plain(v) for k, v in g.items()}} for g in groups]
        _write_parquet(path, pa.Table.from_pylist(rows))

    def write_exact(
        self, round_number: int, prompts: pa.Table, agents: pa.Table, scheme: Mapping[str, Any]
    ) -> None:
        """Write one ended round's exact distributions (`results.exact_store`) and record the round
        and how they were computed under the manifest's `exact` entry."""
        self._check_open()
        if not any(r["round"] == round_number for r in self._rounds):
            raise BundleError(f"round {round_number} has not ended; its distributions wait")
        prompts_path, agents_path = exact_paths(self._path, round_number)
        prompts_path.parent.mkdir(parents=True, exist_ok=True)
        _write_parquet(prompts_path, prompts)
        _write_parquet(agents_path, agents)
        entry = self._manifest.get("exact")
        rounds = entry.get("rounds", []) if isinstance(entry, dict) else []
        rounds = sorted({*rounds, round_number})
        self._manifest["exact"] = {**jsonable(dict(scheme)), "rounds": rounds}
        self._write_manifest()

    def rounds_without_exact(self) -> list[int]:
        """Ended rounds whose exact distributions the manifest does not record (a run stopped
        while walking them, perhaps leaving a file half written): a resume walks them again."""
        entry = self._manifest.get("exact")
        kept = set(entry.get("rounds", [])) if isinstance(entry, dict) else set()
        return sorted(int(r["round"]) for r in self._rounds if int(r["round"]) not in kept)

    def record(self, **extra: Any) -> None:
        """Merge extra top-level keys (timings, cluster, ...) into the manifest and rewrite it."""
        clash = sorted(set(extra) & set(MANIFEST_KEYS))
        if clash:
            raise BundleError(f"manifest keys {clash} are managed by the writer; use other names")
        self._manifest.update(extra)
        self._write_manifest()

    def record_engine_work(self, round_number: int, rows: Sequence[Mapping[str, Any]]) -> None:
        """Record what each engine did in round `round_number` (`ENGINE_WORK`), replacing what
        an earlier try of that round recorded."""
        earlier = self._manifest.get(ENGINE_WORK)
        kept = [r for r in (earlier or []) if r.get("round") != round_number]
        entries = [
            {name: plain(row.get(name)) for name in ENGINE_WORK_FIELDS} | {"round": round_number}
            for row in rows
        ]
        self.record(**{ENGINE_WORK: [*kept, *entries]})

    def append_event(self, event: Mapping[str, Any], *, durable: bool = True) -> None:
        """Append one event to events.jsonl as a JSON line; thread-safe.

        Every line is flushed at once (another process reading the file sees it); `durable`
        lines are also fsynced, with every line before them. Progress events pass
        `durable=False`: thousands of shards a round would otherwise cost an fsync each.
        """
        with self._events:
            self._check_open()
            self._append(event, durable=durable)

    def _append(self, event: Mapping[str, Any], *, durable: bool = True) -> None:
        """Write one event line; the caller holds the events lock."""
        if not isinstance(event, Mapping):
            raise ContractError(f"an event must be a mapping, got {type(event).__name__}")
        data = redact(jsonable(event))
        line = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        path = self._path / EVENTS_FILE
        new = not path.exists()
        with path.open("ab") as handle:
            handle.write(line.encode("utf-8") + b"\n")
            handle.flush()
            if durable or new:
                os.fsync(handle.fileno())  # fsync covers the file's earlier lines too
        if new:
            _files.fsync_dir(self._path)

    def _file_entries(self) -> dict[str, dict[str, Any]]:
        """Rows, sha256 and bytes of every data file, for the finished manifest."""
        files = {}
        for path in data_files(self._path):
            try:
                rows = file_rows(path)
            except (pa.ArrowException, OSError) as exc:
                raise BundleError(f"{path}: not a readable Parquet file ({exc})") from None
            entry = {"rows": rows, "sha256": _files.sha256_file(path)}
            files[relative(self._path, path)] = entry | {"bytes": path.stat().st_size}
        return files

    def finish(
        self,
        status: str = RunStatus.COMPLETE,
        error: str | None = None,
        event: Mapping[str, Any] | None = None,
        *,
        resumable: bool = True,
    ) -> None:
        """Hash every data file into the manifest and mark the run complete, failed or cancelled.

        A failed run's manifest records `resumable` beside its error (False: a resume would
        replay the same prompts). `event` (the run's last) is appended to events.jsonl first,
        so the hashes cover it. The writer lock is released.
        """
        with self._events:
            self._check_open()
            if status not in FINISH_STATUSES:
                wanted = ", ".join(FINISH_STATUSES)
                raise BundleError(f"finish status must be one of {wanted}, got {status!r}")
            if event is not None:
                self._append(event)
            self._manifest.update(
                status=status, finished_at=_now(), files=self._file_entries(), error=error
            )
            if status == RunStatus.FAILED:
                self._manifest["resumable"] = resumable
            self._write_manifest()
            self._finished = True
        self.close()

    def close(self) -> None:
        """Release the writer lock; an unfinished bundle stays "running", to be resumed."""
        self._closed = not self._finished
        if self._lock_path is not None:
            lock.release(self._lock_path, self)
            self._lock_path = None

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if not (self._finished or self._closed):
            self.end(exc)
        return False

    def end(self, error: BaseException | None, event: Mapping[str, Any] | None = None) -> None:
        """Finish a run that ended with `error` (None: it completed) as `final_status` says,
        `event` its last event; a failure to finish never hides `error` (it becomes a note).
        A run that did not complete keeps no part file of the round it was playing."""
        status = final_status(error)
        try:
            if error is not None:
                self._drop_open_rounds()
            self.finish(
                status,
                error=None if error is None else one_line(error),
                event=event,
                resumable=error is None or is_resumable(error),
            )
        except Exception as finish_exc:
            if error is None:
                raise
            error.add_note(f"workbench: could not mark {self._path} as {status}: {finish_exc}")
        finally:
            self.close()

    def __repr__(self) -> str:
        return f"BundleWriter({str(self._path)!r}, status={self._manifest.get('status')!r})"
