"""Result bundles: one directory per run holding its config, data and a manifest of hashes.

`BundleWriter` writes a bundle as the run goes, every file atomically (temp file, fsync, rename),
and keeps the manifest at status "running" until `finish()`, so a killed run is visibly incomplete
and never looks complete. `Bundle` reads one back; `list_bundles` lists a results directory.
Everything is Parquet, JSON or YAML: readable with pandas, pyarrow, polars or duckdb alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import re
import secrets
import socket
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workbench.config import RunConfig, resolve_population, to_yaml, validate
from workbench.errors import BundleError, ConfigError

SCHEMA_VERSION = 1
"""Version of the bundle layout; `Bundle.open` refuses any other."""

STATUSES = ("running", "complete", "failed", "cancelled")
FINAL_STATUSES = ("complete", "failed", "cancelled")
REDACTED = "***REDACTED***"

MANIFEST = "manifest.json"
CONFIG_FILE = "config.yaml"
PERSONAS_FILE = "personas.parquet"
ROUNDS_FILE = "rounds.parquet"
GROUPS_FILE = "groups.parquet"
RESPONSES_DIR = "responses"
FIGURES_DIR = "figures"

RESPONSE_SCHEMA: pa.Schema = pa.schema(
    [
        ("agent_id", pa.int64()),
        ("round", pa.int32()),
        ("guess", pa.float64()),
        ("status", pa.string()),
        ("raw", pa.string()),
        ("latency_s", pa.float64()),
        ("prompt_tokens", pa.int32()),
        ("completion_tokens", pa.int32()),
    ]
)
"""Columns of every responses part file; extra columns may follow them."""

REQUIRED_RESPONSE_COLUMNS: tuple[str, ...] = ("agent_id", "guess", "status")
"""Columns a responses table must bring; the other schema columns are filled when absent."""

ROUND_SCHEMA: pa.Schema = pa.schema(
    [
        ("round", pa.int64()),
        ("n", pa.int64()),
        ("n_valid", pa.int64()),
        ("mean", pa.float64()),
        ("median", pa.float64()),
        ("std", pa.float64()),
        ("target", pa.float64()),
        ("winning_guess", pa.float64()),
        ("n_winners", pa.int64()),
        ("share_within_half", pa.float64()),
        ("seconds", pa.float64()),
    ]
)
ROUND_COLUMNS: tuple[str, ...] = tuple(ROUND_SCHEMA.names)
"""Columns of rounds.parquet, in order; extra statistics follow them."""

LIST_COLUMNS: tuple[str, ...] = (
    "run_id",
    "status",
    "created_at",
    "n_agents",
    "rounds_done",
    "path",
)

_RESERVED_KEYS = (
    "schema_version",
    "run_id",
    "status",
    "created_at",
    "updated_at",
    "finished_at",
    "config",
    "seeds",
    "versions",
    "model",
    "host",
    "rounds",
    "files",
    "error",
)
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SECRET_WORDS = {"apikey", "token", "secret", "secrets", "password", "passwd", "authorization"}


# --------------------------------------------------------------------------- helpers


def new_run_id(name: str) -> str:
    """A fresh run id: `<name>-<UTC yyyymmdd-HHMMSS>-<4 hex>`, sortable by start time."""
    return f"{name}-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def _key_words(key: str) -> list[str]:
    """A key split into lower-case words at separators and camelCase humps."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _is_secret_key(key: Any) -> bool:
    """Whether a dict key names a secret (api_key, apiKey, access_token, Authorization, ...).

    Matches whole words so that `max_tokens` or `prompt_tokens` are not taken for secrets.
    """
    if not isinstance(key, str):
        return False
    words = _key_words(key)
    if words and words[-1] == "env":
        return False  # api_key_env names the variable that holds the key, not the key
    pairs = {"".join(words[i : i + 2]) for i in range(len(words) - 1)}
    return bool(_SECRET_WORDS.intersection(words) or "apikey" in pairs)


def redact(data: Any) -> Any:
    """A deep copy of nested dicts/lists with every secret value replaced by "***REDACTED***".

    Keys matching api_key|apikey|token|secret|password|authorization (any case) are secrets;
    an empty value (None or "") is kept, so a config without a key does not claim to have one.
    """
    if isinstance(data, dict):
        return {
            k: REDACTED if _is_secret_key(k) and v not in (None, "") else redact(v)
            for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return type(data)(redact(v) for v in data)
    return data


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values; everything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _jsonable(value: Any) -> Any:
    """Plain JSON data (nan/inf become null, paths and times become text) for the manifest."""
    value = _plain(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
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


def _fsync_dir(directory: Path) -> None:
    """Flush a directory entry (a rename) to disk where the platform allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _atomic_write(path: Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write `path` through `write(file)` into a temp file beside it, fsync, then rename.

    A process killed at any moment leaves either the old file or the new one, never half of one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _write_text(path: Path, text: str) -> None:
    """Atomically write UTF-8 text."""
    _atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))


def _write_parquet(path: Path, table: pa.Table) -> None:
    """Atomically write an Arrow table as Parquet."""
    _atomic_write(path, lambda handle: pq.write_table(table, handle))


def write_frame(frame: pd.DataFrame, path: str | Path) -> Path:
    """Atomically write a DataFrame as .parquet or .csv (by suffix), e.g. a persona set."""
    path = Path(path)
    if path.suffix == ".csv":
        _write_text(path, frame.to_csv(index=False))
    elif path.suffix == ".parquet":
        _write_parquet(path, pa.Table.from_pandas(frame, preserve_index=False))
    else:
        raise BundleError(f"{path}: use a .parquet or .csv file name")
    return path


def _read_parquet(path: Path) -> pa.Table:
    """Read a Parquet file; BundleError naming the file when it is missing or corrupt."""
    if not path.is_file():
        raise BundleError(f"{path}: missing from the bundle")
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise BundleError(f"{path}: not a readable Parquet file ({exc})") from None


def _sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _parquet_rows(path: Path) -> int:
    """Row count from a Parquet file's footer, without reading its data."""
    return pq.ParquetFile(path).metadata.num_rows


def _data_files(bundle: Path) -> Iterator[Path]:
    """Every data file of a bundle: all files except the manifest, config.yaml and figures/."""
    for path in sorted(bundle.rglob("*")):
        rel = path.relative_to(bundle)
        if not path.is_file() or rel.parts[0] == FIGURES_DIR or path.name.startswith("."):
            continue  # figures are not data; ".*" are temp files a killed write left behind
        if rel.as_posix() in (MANIFEST, CONFIG_FILE):
            continue
        yield path


def _host() -> dict[str, Any]:
    """Where the run happens: hostname, platform, CPUs, Python implementation."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python_implementation": platform.python_implementation(),
    }


def _default_versions() -> dict[str, str]:
    """Versions every bundle records; the caller's `versions` extend and override them."""
    import workbench

    return {
        "python": platform.python_version(),
        "workbench": workbench.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "pyarrow": pa.__version__,
    }


def _one_line(exc: BaseException) -> str:
    """An exception as `Type: message` on one line, at most 2000 characters."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())[:2000]


# --------------------------------------------------------------------------- tables


def _as_table(data: pa.Table | pd.DataFrame, what: str) -> pa.Table:
    """An Arrow table from a table or a DataFrame (its index dropped)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pd.DataFrame):
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise BundleError(f"{what}: cannot convert the DataFrame to Arrow ({exc})") from None
    raise BundleError(f"{what}: expected a pyarrow Table or pandas DataFrame, got {type(data)}")


def response_table(data: pa.Table | pd.DataFrame, round_number: int) -> pa.Table:
    """A responses table in RESPONSE_SCHEMA order and types, extra columns kept after them.

    Missing `round` is filled with `round_number`; missing optional columns with nulls.
    """
    what = f"responses of round {round_number}"
    table = _as_table(data, what)
    missing = [c for c in REQUIRED_RESPONSE_COLUMNS if c not in table.column_names]
    if missing:
        raise BundleError(f"{what}: missing required column(s) {missing}; got {table.column_names}")
    columns, fields = [], []
    for field in RESPONSE_SCHEMA:
        if field.name in table.column_names:
            try:
                column = table.column(field.name).cast(field.type)
            except (pa.ArrowException, TypeError) as exc:
                raise BundleError(
                    f"{what}: column {field.name!r} cannot be cast to {field.type} ({exc})"
                ) from None
        elif field.name == "round":
            column = pa.array(np.full(table.num_rows, round_number, dtype=np.int32))
        else:
            column = pa.nulls(table.num_rows, field.type)
        columns.append(column)
        fields.append(field)
    for name in table.column_names:
        if name not in RESPONSE_SCHEMA.names:
            columns.append(table.column(name))
            fields.append(table.schema.field(name))
    result = pa.Table.from_arrays(columns, schema=pa.schema(fields))
    rounds = result.column("round")
    if rounds.null_count or pc.any(pc.not_equal(rounds, round_number)).as_py():
        raise BundleError(f"{what}: column 'round' holds other values than {round_number}")
    return result


def rounds_table(rounds: list[dict[str, Any]]) -> pa.Table:
    """rounds.parquet's table: ROUND_COLUMNS (null where a round lacks one), then extras."""
    extras: dict[str, None] = {}
    for stats in rounds:
        extras.update(dict.fromkeys(k for k in stats if k not in ROUND_COLUMNS))
    columns, fields = [], []
    for name in (*ROUND_COLUMNS, *extras):
        values = [_plain(stats.get(name)) for stats in rounds]
        try:
            if name in ROUND_COLUMNS:
                field = ROUND_SCHEMA.field(name)
                column = pa.array(values).cast(field.type) if values else pa.array([], field.type)
            else:
                column = pa.array(values)
                field = pa.field(name, column.type)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise BundleError(
                f"round statistic {name!r}: cannot store {values!r} ({exc})"
            ) from None
        columns.append(column)
        fields.append(field)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


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


# --------------------------------------------------------------------------- writer


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
        if not _RUN_ID.fullmatch(run_id):
            raise BundleError(
                f"run id {run_id!r}: use letters, digits, '_', '.' and '-', starting with a "
                "letter or digit"
            )
        self._run_id = run_id
        self._path = Path(root) / run_id
        self._finished = False
        self._rounds: list[dict[str, Any]] = []
        config_data, config_yaml = _redacted_config(config)
        Path(root).mkdir(parents=True, exist_ok=True)
        try:
            self._path.mkdir()
        except FileExistsError:
            raise BundleError(
                f"{self._path}: already exists; a bundle is never overwritten, choose another "
                "run id"
            ) from None
        (self._path / FIGURES_DIR).mkdir()
        now = _now()
        self._manifest: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "status": "running",
            "created_at": now,
            "updated_at": now,
            "finished_at": None,
            "config": config_data,
            "seeds": {"run": config.seed} | dict(seeds or {}),
            "versions": _default_versions() | dict(versions or {}),
            "model": dict(model or {}),
            "host": _host(),
            "rounds": [],
            "files": {},
            "error": None,
        }
        _write_text(self._path / CONFIG_FILE, config_yaml)
        _write_parquet(self._path / ROUNDS_FILE, rounds_table([]))
        self._write_manifest()

    @classmethod
    def reopen(cls, path: str | Path) -> BundleWriter:
        """Continue an unfinished bundle (cancelled, failed or killed) after its last full round.

        Response files and group statistics of a round that never ended are removed; the
        manifest goes back to "running" and records when the run was resumed. A complete bundle
        is refused.
        """
        bundle = Bundle.open(path)
        if bundle.status == "complete":
            raise BundleError(f"{bundle.path}: already complete; nothing to resume")
        self = cls.__new__(cls)
        self._run_id, self._path, self._finished = bundle.run_id, bundle.path, False
        self._rounds = [dict(r) for r in bundle.manifest.get("rounds", [])]
        done = {int(r["round"]) for r in self._rounds}
        responses = self._path / RESPONSES_DIR
        for round_dir in responses.glob("round-*") if responses.is_dir() else []:
            if _is_round_dir(round_dir) and int(round_dir.name.removeprefix("round-")) not in done:
                for part in round_dir.iterdir():
                    part.unlink()
                round_dir.rmdir()
        # rounds.parquet and groups.parquet may hold a round the manifest never recorded
        _write_parquet(self._path / ROUNDS_FILE, rounds_table(self._rounds))
        groups = self._path / GROUPS_FILE
        if groups.is_file():
            table = _read_parquet(groups)
            rounds = table.column("round")
            kept = table.filter(pc.is_in(rounds, pa.array(sorted(done), rounds.type)))
            if kept.num_rows != table.num_rows:
                _write_parquet(groups, kept)
        manifest = dict(bundle.manifest)
        resumed = [*manifest.get("resumed", []), {"at": _now(), "after_round": len(done)}]
        manifest.update(status="running", finished_at=None, error=None, files={}, resumed=resumed)
        self._manifest = manifest
        self._write_manifest()
        return self

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

    def _write_manifest(self) -> None:
        self._manifest["updated_at"] = _now()
        data = redact(_jsonable(self._manifest))
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        _write_text(self._path / MANIFEST, text)

    def write_personas(self, df: pd.DataFrame) -> None:
        """Write personas.parquet (one row per agent), replacing an earlier one."""
        self._check_open()
        _write_parquet(self._path / PERSONAS_FILE, _as_table(df, PERSONAS_FILE))

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
        _write_parquet(self._part_path(round_number, shard), data)

    def _part_path(self, round_number: int, shard: int) -> Path:
        return self._path / RESPONSES_DIR / f"round-{round_number}" / f"part-{shard:05d}.parquet"

    def end_round(self, stats: dict) -> None:
        """Record one finished round's statistics: rewrites rounds.parquet and the manifest.

        `stats` must hold "round" and "seconds"; other keys become extra columns.
        """
        self._check_open()
        missing = [k for k in ("round", "seconds") if k not in stats]
        if missing:
            raise BundleError(f"round statistics must hold {missing}; got {sorted(stats)}")
        entry = {k: _plain(v) for k, v in stats.items()}
        if any(r["round"] == entry["round"] for r in self._rounds):
            raise BundleError(f"round {entry['round']} was already ended")
        rounds = [*self._rounds, entry]
        _write_parquet(self._path / ROUNDS_FILE, rounds_table(rounds))
        self._rounds = rounds
        self._manifest["rounds"] = [_jsonable(r) for r in rounds]
        self._write_manifest()

    def write_group_stats(self, round_number: int, groups: list[dict[str, Any]]) -> None:
        """Append one round's per-group statistics (sub-environments) to groups.parquet."""
        self._check_open()
        path = self._path / GROUPS_FILE
        earlier = _read_parquet(path).to_pylist() if path.is_file() else []
        rows = [r for r in earlier if r["round"] != round_number]
        rows += [{"round": round_number, **{k: _plain(v) for k, v in g.items()}} for g in groups]
        _write_parquet(path, pa.Table.from_pylist(rows))

    def record(self, **extra: Any) -> None:
        """Merge extra top-level keys (timings, cluster, ...) into the manifest and rewrite it."""
        clash = sorted(set(extra) & set(_RESERVED_KEYS))
        if clash:
            raise BundleError(f"manifest keys {clash} are managed by the writer; use other names")
        self._manifest.update(extra)
        self._write_manifest()

    def finish(self, status: str = "complete", error: str | None = None) -> None:
        """Hash every data file into the manifest and mark the run complete, failed or cancelled."""
        self._check_open()
        if status not in FINAL_STATUSES:
            raise BundleError(f"finish status must be one of {FINAL_STATUSES}, got {status!r}")
        files = {}
        for path in _data_files(self._path):
            rel = path.relative_to(self._path).as_posix()
            try:
                rows = _parquet_rows(path)
            except (pa.ArrowException, OSError) as exc:
                raise BundleError(f"{path}: not a readable Parquet file ({exc})") from None
            files[rel] = {"rows": rows, "sha256": _sha256(path), "bytes": path.stat().st_size}
        self._manifest.update(
            status=status, finished_at=_now(), files=files, error=None if error is None else error
        )
        self._write_manifest()
        self._finished = True

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if self._finished:
            return False
        if exc is None:
            self.finish("complete")
            return False
        import asyncio

        cancelled = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        try:
            self.finish("cancelled" if cancelled else "failed", error=_one_line(exc))
        except Exception as finish_exc:  # never hide the run's own exception
            exc.add_note(f"workbench: could not mark {self._path} as failed: {finish_exc}")
        return False

    def __repr__(self) -> str:
        return f"BundleWriter({str(self._path)!r}, status={self.status!r})"


# --------------------------------------------------------------------------- reader


def _not_a_bundle(path: Path, why: str) -> BundleError:
    return BundleError(f"{path / MANIFEST}: not a result bundle ({why})")


class Bundle:
    """A result bundle read back from disk: its manifest, config and tables."""

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

    @property
    def run_id(self) -> str:
        """The run id."""
        return str(self.manifest["run_id"])

    @property
    def status(self) -> str:
        """running, complete, failed or cancelled (running after a killed run too)."""
        return str(self.manifest["status"])

    @property
    def is_complete(self) -> bool:
        """Whether the run finished normally."""
        return self.status == "complete"

    @cached_property
    def config(self) -> RunConfig:
        """The run's resolved config (secrets redacted), validated."""
        try:
            return validate(RunConfig, self.manifest["config"], f"{self.path / MANIFEST}: config")
        except ConfigError as exc:
            raise BundleError(str(exc)) from None

    @property
    def rounds_count(self) -> int:
        """How many rounds the manifest records as done."""
        rounds = self.manifest.get("rounds")
        return len(rounds) if isinstance(rounds, list) else 0

    def personas(self) -> pd.DataFrame:
        """The personas table, one row per agent."""
        return _read_parquet(self.path / PERSONAS_FILE).to_pandas()

    def groups(self) -> pd.DataFrame:
        """Per-round statistics of each group (empty when the run had no `game.group_by`)."""
        path = self.path / GROUPS_FILE
        return _read_parquet(path).to_pandas() if path.is_file() else pd.DataFrame()

    def rounds(self) -> pd.DataFrame:
        """Per-round statistics, one row per finished round."""
        return _read_parquet(self.path / ROUNDS_FILE).to_pandas()

    def response_files(self, round_number: int | None = None) -> list[Path]:
        """The responses part files, of one round or all, in (round, shard) order."""
        base = self.path / RESPONSES_DIR
        if round_number is not None:
            return sorted((base / f"round-{round_number}").glob("part-*.parquet"))

        def key(path: Path) -> tuple[int, str]:
            return int(path.parent.name.removeprefix("round-")), path.name

        files = [p for p in base.glob("round-*/part-*.parquet") if _is_round_dir(p.parent)]
        return sorted(files, key=key)

    def responses(self, round_number: int | None = None) -> pd.DataFrame:
        """Every agent's decision in one round (or all rounds), sorted by round then agent_id."""
        tables = [_conform(_read_parquet(p), p) for p in self.response_files(round_number)]
        if not tables:
            return RESPONSE_SCHEMA.empty_table().to_pandas()
        try:
            table = pa.concat_tables(tables, promote_options="permissive")
        except pa.ArrowException as exc:
            raise BundleError(
                f"{self.path / RESPONSES_DIR}: part files do not agree ({exc})"
            ) from None
        table = table.sort_by([("round", "ascending"), ("agent_id", "ascending")])
        return table.to_pandas()

    def __repr__(self) -> str:
        return f"Bundle({str(self.path)!r}, status={self.status!r})"


def _conform(table: pa.Table, path: Path) -> pa.Table:
    """A part file's RESPONSE_SCHEMA columns cast to their schema types, so parts concatenate."""
    missing = [c for c in ("agent_id", "round") if c not in table.column_names]
    if missing:
        raise BundleError(f"{path}: missing column(s) {missing}")
    for i, name in enumerate(table.column_names):
        if name in RESPONSE_SCHEMA.names:
            field = RESPONSE_SCHEMA.field(name)
            if table.schema.field(i).type != field.type:
                try:
                    table = table.set_column(i, field, table.column(i).cast(field.type))
                except (pa.ArrowException, TypeError) as exc:
                    raise BundleError(
                        f"{path}: column {name!r} is not {field.type} ({exc})"
                    ) from None
    return table


def _is_round_dir(path: Path) -> bool:
    return re.fullmatch(r"round-\d+", path.name) is not None


def list_bundles(root: str | Path) -> pd.DataFrame:
    """One row per bundle under `root` (run_id, status, created_at, n_agents, rounds_done, path).

    Directories that are not bundles are skipped; a missing root gives an empty frame.
    """
    rows = []
    root = Path(root)
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            bundle = Bundle.open(path)
        except BundleError:
            continue
        config = bundle.manifest.get("config")
        rows.append(
            {
                "run_id": bundle.run_id,
                "status": bundle.status,
                "created_at": bundle.manifest.get("created_at"),
                "n_agents": config.get("n_agents") if isinstance(config, dict) else None,
                "rounds_done": bundle.rounds_count,
                "path": str(path),
            }
        )
    frame = pd.DataFrame(rows, columns=list(LIST_COLUMNS))
    return frame.sort_values(["created_at", "run_id"], ignore_index=True) if rows else frame
