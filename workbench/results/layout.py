"""The result bundle's format, in one place: names, schemas, table conformers and part paths.

The writer, the reader, `verify`, replay and the plots all take the bundle's layout from here;
nothing else spells a file name or a column list. Arrow only (no pandas): a DataFrame is
accepted where tables come in, and produced only by the reader.
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from workbench.errors import BundleError
from workbench.game.rules import ROUND_STAT_FIELDS, RoundStats

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_VERSION = 1
"""Version of the bundle layout; `Bundle.open` refuses any other."""

MANIFEST = "manifest.json"
"""The run's status, resolved config, seeds, versions, model identity (and llama.cpp build),
host, per-round timings, the error of a failed run, and the rows and sha256 of every data file."""
CONFIG_FILE = "config.yaml"
"""The resolved config: `workbench run <bundle>/config.yaml` runs it again."""
PERSONAS_FILE = "personas.parquet"
"""One row per agent: `agent_id`, its attribute columns, its persona text."""
ROUNDS_FILE = "rounds.parquet"
"""One row per round: the round's statistics (`ROUND_SCHEMA`)."""
GROUPS_FILE = "groups.parquet"
"""The same statistics per round and group (only with `game.group_by`)."""
EVENTS_FILE = "events.jsonl"
"""The run's events, one JSON object a line, appended as they happen."""
RESPONSES_DIR = "responses"
"""Every agent's answer (`RESPONSE_SCHEMA`), one part file per round and shard (`part_path`)."""
FIGURES_DIR = "figures"
"""Figures saved with `viz.save_figure` (PNG and PDF): derived views, not data."""
EXACT_DIR = "exact"
"""Exact answer distributions per round (`results.exact_store`), where the run kept them
(`exact_paths`)."""
LOCK_FILE = ".writer.lock"
"""The live writer's lock (pid, host, started_at); its leading dot keeps it out of the data."""

NOT_DATA: tuple[str, ...] = (MANIFEST, CONFIG_FILE)
"""Files at the bundle's top that are not data files (the manifest does not hash them)."""

MANIFEST_KEYS: tuple[str, ...] = (
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
    "resumable",
)
"""Top-level manifest keys the writer manages; `record()` refuses them."""

ENGINE_WORK = "engine_work"
"""The manifest key of what each model engine did per round (distribution mode on Ray's model
actors, or on a served model's several endpoints): one entry per (round, engine) with the fields
of `ENGINE_WORK_FIELDS`."""
ENGINE_WORK_FIELDS: tuple[str, ...] = (
    "round",
    "engine",
    "node",
    "prompts",
    "prompt_tokens",
    "nodes",
    "visits",
    "agents",
    "seconds",
)
"""One engine's round: its number (`engine`) and node (a Ray node id; for a served model's
endpoint, its number in `base_urls` and its host:port); the distinct prompts it walked and their
prompt tokens (each prompt once); the trie nodes its model scored (`nodes`) and those the walks
asked for (`visits`: nodes scored before, for another shard, are read back, not scored); the
answers drawn (`agents`) and the seconds it was busy walking."""

RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
"""A run id, which is also the bundle's directory name."""

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
        ("extracted", pa.bool_()),
    ]
)
"""Columns of every responses part file; extra columns may follow them."""

ADDED_RESPONSE_COLUMNS: tuple[str, ...] = ("extracted",)
"""Columns newer than some bundles of this schema version; `conform` adds them as nulls
(unknown) to part files written before them."""

REQUIRED_RESPONSE_COLUMNS: tuple[str, ...] = ("agent_id", "guess", "status")
"""Columns a responses table must bring; the other schema columns are filled when absent."""

_ARROW_TYPES: dict[type, pa.DataType] = {int: pa.int64(), float: pa.float64()}


def _stat_fields() -> list[pa.Field]:
    """Arrow fields of RoundStats' fields, in order, typed from the dataclass."""
    hints = typing.get_type_hints(RoundStats)
    return [pa.field(name, _ARROW_TYPES[hints[name]]) for name in ROUND_STAT_FIELDS]


ROUND_SCHEMA: pa.Schema = pa.schema(
    [pa.field("round", pa.int64()), *_stat_fields(), pa.field("seconds", pa.float64())]
)
"""rounds.parquet: the round number, the statistics `game` defines, and the round's seconds."""

ROUND_COLUMNS: tuple[str, ...] = tuple(ROUND_SCHEMA.names)
"""Columns of rounds.parquet, in order; extra statistics follow them."""

LATER_STATS: dict[str, Any] = {
    f.name: f.default
    for f in dataclasses.fields(RoundStats)
    if f.default is not dataclasses.MISSING
}
"""Statistics added after the first bundles (those with a default), and what they read as where
a bundle did not record them: older rounds.parquet and groups.parquet files lack the column."""

_PART = re.compile(rf"^{RESPONSES_DIR}/round-(\d+)/part-(\d+)\.parquet$")
_ROUND_DIR = re.compile(r"^round-\d+$")


# --------------------------------------------------------------------------- paths


def round_dir(bundle: str | Path, round_number: int) -> Path:
    """The folder holding one round's response part files."""
    return Path(bundle) / RESPONSES_DIR / f"round-{round_number}"


def part_path(bundle: str | Path, round_number: int, shard: int) -> Path:
    """Where one shard's responses of one round live: responses/round-<k>/part-<shard>.parquet."""
    return round_dir(bundle, round_number) / f"part-{shard:05d}.parquet"


def exact_paths(bundle: str | Path, round_number: int) -> tuple[Path, Path]:
    """Where one round's exact distributions live: exact/round-<k>/prompts.parquet and
    agents.parquet (`results.exact_store`)."""
    folder = Path(bundle) / EXACT_DIR / f"round-{round_number}"
    return folder / "prompts.parquet", folder / "agents.parquet"


def is_round_dir(path: str | Path) -> bool:
    """Whether a folder's name is a round folder's (round-<k>)."""
    return _ROUND_DIR.fullmatch(Path(path).name) is not None


def round_of_dir(path: str | Path) -> int:
    """The round number in a round folder's name (round-<k>)."""
    return int(Path(path).name.removeprefix("round-"))


def parse_part_path(rel: str) -> tuple[int, int] | None:
    """(round, shard) of a bundle-relative part file path, or None when it is not one."""
    match = _PART.fullmatch(rel)
    return (int(match.group(1)), int(match.group(2))) if match else None


def is_symlink_error(path: Path) -> BundleError:
    """The one-line error for a symbolic link found inside a bundle."""
    return BundleError(
        f"{path}: is a symbolic link; a bundle holds plain files only (never followed) - "
        "replace it with the real file or restore the bundle"
    )


def bundle_file(bundle: str | Path, rel: str) -> Path:
    """`bundle/rel`, refusing (BundleError) any symbolic link on the way below the bundle."""
    path = Path(bundle)
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            raise is_symlink_error(path)
    return path


def walk(bundle: str | Path) -> Iterator[Path]:
    """Every entry below the bundle in sorted order, never following a symbolic link."""
    try:
        entries = sorted(os.scandir(bundle), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        yield path
        if entry.is_dir(follow_symlinks=False):
            yield from walk(path)


def symlinks(bundle: str | Path) -> list[Path]:
    """The symbolic links inside a bundle (files or folders), which no reader follows."""
    return [path for path in walk(bundle) if path.is_symlink()]


def is_data_file(bundle: str | Path, path: Path) -> bool:
    """Whether `path` is a data file: a plain file outside figures/, not the manifest or config.

    Names starting with "." (temp files a killed write left behind, the writer's lock) are not.
    """
    rel = path.relative_to(bundle)
    if path.is_symlink() or not path.is_file() or path.name.startswith("."):
        return False
    return rel.parts[0] != FIGURES_DIR and rel.as_posix() not in NOT_DATA


def data_files(bundle: str | Path) -> Iterator[Path]:
    """Every data file of a bundle, the ones `finish()` hashes into the manifest."""
    return (path for path in walk(bundle) if is_data_file(bundle, path))


def relative(bundle: str | Path, path: Path) -> str:
    """A bundle file's path relative to the bundle, with forward slashes (the manifest's key)."""
    return path.relative_to(bundle).as_posix()


# --------------------------------------------------------------------------- files


def jsonl_rows(path: str | Path) -> int:
    """Complete lines of a JSON-lines file (a partial last line is not counted)."""
    with Path(path).open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def file_rows(path: str | Path) -> int:
    """A data file's row count: lines of a .jsonl file, the footer's count of a Parquet file.

    Raises pyarrow.ArrowException or OSError when a Parquet file cannot be read.
    """
    if Path(path).suffix == ".jsonl":
        return jsonl_rows(path)
    return pq.ParquetFile(path).metadata.num_rows


def read_parquet(path: Path, columns: list[str] | None = None) -> pa.Table:
    """Read a Parquet file (only `columns`, when given); BundleError naming the file when it is
    missing, a link or corrupt, or lacks one of `columns`."""
    if path.is_symlink():
        raise is_symlink_error(path)
    if not path.is_file():
        raise BundleError(f"{path}: missing from the bundle")
    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        raise BundleError(f"{path}: not a readable Parquet file ({exc})") from None


# --------------------------------------------------------------------------- tables


def plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values; everything else unchanged."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def as_table(data: pa.Table | pd.DataFrame, what: str) -> pa.Table:
    """An Arrow table from a table or a pandas DataFrame (its index dropped)."""
    if isinstance(data, pa.Table):
        return data
    if type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas"):
        try:
            return pa.Table.from_pandas(data, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise BundleError(f"{what}: cannot convert the DataFrame to Arrow ({exc})") from None
    raise BundleError(f"{what}: expected a pyarrow Table or pandas DataFrame, got {type(data)}")


def _cast(table: pa.Table, field: pa.Field, what: str) -> pa.ChunkedArray:
    """One column cast to its schema type; BundleError naming the column when it cannot be."""
    try:
        return table.column(field.name).cast(field.type)
    except (pa.ArrowException, TypeError) as exc:
        raise BundleError(
            f"{what}: column {field.name!r} cannot be cast to {field.type} ({exc})"
        ) from None


def response_table(data: pa.Table | pd.DataFrame, round_number: int) -> pa.Table:
    """A responses table in RESPONSE_SCHEMA order and types, extra columns kept after them.

    Missing `round` is filled with `round_number`; missing optional columns with nulls.
    """
    what = f"responses of round {round_number}"
    table = as_table(data, what)
    missing = [c for c in REQUIRED_RESPONSE_COLUMNS if c not in table.column_names]
    if missing:
        raise BundleError(f"{what}: missing required column(s) {missing}; got {table.column_names}")
    columns: list[Any] = []
    fields = list(RESPONSE_SCHEMA)
    for field in RESPONSE_SCHEMA:
        if field.name in table.column_names:
            columns.append(_cast(table, field, what))
        elif field.name == "round":
            columns.append(pa.array(np.full(table.num_rows, round_number, dtype=np.int32)))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
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
        values = [plain(stats.get(name)) for stats in rounds]
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


def with_later_stats(table: pa.Table) -> pa.Table:
    """A rounds or groups table with every LATER_STATS column, each placed after the statistic
    before it; cells a bundle did not record (an older writer) read as the default."""
    for name, default in LATER_STATS.items():
        field = ROUND_SCHEMA.field(name)
        if name in table.column_names:
            index = table.column_names.index(name)
            column = table.column(index)
            if column.null_count:
                filled = pc.fill_null(column.cast(field.type), default)
                table = table.set_column(index, field, filled)
            continue
        earlier = ROUND_STAT_FIELDS[: ROUND_STAT_FIELDS.index(name)]
        present = [table.column_names.index(c) for c in earlier if c in table.column_names]
        index = max(present) + 1 if present else table.num_columns
        values = pa.array(np.full(table.num_rows, default), field.type)
        table = table.add_column(index, field, values)
    return table


def conform(table: pa.Table, path: Path) -> pa.Table:
    """A part file's RESPONSE_SCHEMA columns cast to their schema types, so parts concatenate;
    ADDED_RESPONSE_COLUMNS that an older file lacks come as nulls, after the schema's others."""
    missing = [c for c in ("agent_id", "round") if c not in table.column_names]
    if missing:
        raise BundleError(f"{path}: missing column(s) {missing}")
    for name in ADDED_RESPONSE_COLUMNS:
        if name not in table.column_names:
            field = RESPONSE_SCHEMA.field(name)
            known = [c for c in table.column_names if c in RESPONSE_SCHEMA.names]
            at = max((table.column_names.index(c) + 1 for c in known), default=0)
            table = table.add_column(at, field, pa.nulls(table.num_rows, field.type))
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
