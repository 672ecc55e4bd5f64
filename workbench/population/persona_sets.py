"""Persona sets on disk: a persona frame as Parquet, with its spec and the writing model's identity.

Data, not model calls: the frame may come from `workbench.agents.persona_writer` or anywhere else;
this module only stores and reads it (atomically, through `workbench._files`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workbench._files import atomic_write
from workbench.config import PopulationSpec
from workbench.errors import ConfigError

__all__ = ["METADATA_KEY", "load_persona_set", "save_persona_set"]

METADATA_KEY = b"workbench"
"""Parquet schema-metadata key holding the set's JSON metadata."""


def save_persona_set(
    frame: pd.DataFrame, spec: PopulationSpec, model_identity: dict[str, Any], path: str | Path
) -> Path:
    """Atomically write `frame` as Parquet, with spec, model identity, n and created_at stored
    as JSON under the schema metadata key b"workbench"."""
    path = Path(path)
    if path.suffix != ".parquet":
        raise ConfigError(f"persona set: use a .parquet file name, got {path.name!r}")
    meta: dict[str, Any] = {
        "kind": "persona_set",
        "spec": spec.model_dump_json(),
        "model": dict(model_identity),
        "n": len(frame),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if "persona_source" in frame.columns:
        meta["sources"] = {
            str(k): int(v) for k, v in frame["persona_source"].value_counts().items()
        }
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[METADATA_KEY] = json.dumps(meta, default=str).encode("utf-8")
    table = table.replace_schema_metadata(schema_meta)

    def write(handle: IO[bytes]) -> None:
        pq.write_table(table, handle)

    return atomic_write(path, write)


def load_persona_set(path: str | Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The frame and metadata dict of a persona set; ConfigError naming the file otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"persona set {str(path)!r} not found; check the path")
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise ConfigError(
            f"persona set {str(path)!r} is not a readable Parquet file: {exc}"
        ) from None
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ConfigError(
            f"persona set {str(path)!r} has no workbench metadata; write it with "
            "`workbench personas generate`"
        )
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"persona set {str(path)!r}: unreadable metadata: {exc}") from None
    return table.to_pandas(), meta
