"""What the ResultsExplorer reads from bundles: the folder's listing (with the model that
answered and the damaged folders), the persona columns to group by, the manifest's provenance,
and a table as the bytes of a CSV or Parquet file.

Pure functions of bundles on disk (no Panel), so the explorer's state is testable on its own
and the same reads serve a notebook.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from workbench.experiment.grid import flatten
from workbench.results import Bundle, list_bundles
from workbench.results.bundle import BUNDLE_COLUMNS, model_label
from workbench.results.export import tidy_table

__all__ = [
    "FORMATS",
    "PROVENANCE_KEYS",
    "TABLES",
    "TIDY",
    "bundle_rows",
    "bundle_table",
    "group_columns",
    "model_label",
    "provenance",
    "table_bytes",
]

TABLES: tuple[str, ...] = ("responses", "rounds", "personas", "tidy")
"""The bundle tables shown and downloadable: each a `Bundle` method of that name, and "tidy",
one row per agent and round with the persona columns, for R and Stata (`results.export`)."""

TIDY = "tidy"
"""The tidy table's name among TABLES."""

FORMATS: tuple[str, ...] = ("csv", "parquet")
"""The download formats."""

PROVENANCE_KEYS: tuple[str, ...] = (
    "status",
    "error",
    "created_at",
    "finished_at",
    "forked_from",
    "seeds",
    "model",
    "versions",
    "backend",
    "host",
)
"""The manifest entries shown as provenance, in order (nested ones flattened to dotted keys)."""

NOT_GROUPS = frozenset({"agent_id", "persona"})
"""Persona columns that are not categories: the id and the persona's text."""


def bundle_rows(root: str | Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """The bundles under `root` (a bundle's row, `results.bundle.BUNDLE_COLUMNS`, oldest first)
    and the damaged ones.

    The second value maps each sub-folder whose manifest.json cannot be read whole to why
    (`list_bundles`' `problem`); folders without a manifest are not bundles and are left out.
    """
    listed = list_bundles(root)  # each manifest read once, the model's name with it
    broken = listed["problem"].notna()
    rows = listed.loc[~broken, list(BUNDLE_COLUMNS)].reset_index(drop=True)
    damaged = listed.loc[broken, ["path", "problem"]].to_dict("split")["data"]
    return rows, {Path(str(path)).name: str(why) for path, why in damaged}


def group_columns(bundle: Bundle) -> list[str]:
    """The persona columns a distribution can be grouped by (all but the id and the text);
    read from the Parquet schema, so a million personas cost nothing here."""
    return [n for n in bundle.persona_columns() if n not in NOT_GROUPS]


def provenance(bundle: Bundle) -> pd.DataFrame:
    """What a bundle's manifest records about how it was made: PROVENANCE_KEYS as (key, value)
    rows, nested entries as dotted keys (seeds.run, versions.numpy, model.file_sha256, ...);
    entries the manifest leaves empty are left out."""
    manifest = bundle.manifest
    picked = {k: manifest[k] for k in PROVENANCE_KEYS if manifest.get(k) is not None}
    rows = [(key, "" if v is None else str(v)) for key, v in flatten(picked).items()]
    return pd.DataFrame(rows, columns=["key", "value"])


def bundle_table(bundle: Bundle, name: str) -> pd.DataFrame:
    """The bundle's table `name` (one of TABLES), as its reader gives it."""
    if name not in TABLES:
        raise ValueError(f"table must be one of {list(TABLES)}, got {name!r}")
    if name == TIDY:
        return tidy_table(bundle)
    return getattr(bundle, name)()


def table_bytes(table: pd.DataFrame, fmt: str) -> bytes:
    """A table as the bytes of a CSV (header, no index) or Parquet file, written by Arrow."""
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    sink = io.BytesIO()
    if fmt == "csv":
        pa_csv.write_csv(arrow, sink)
    elif fmt == "parquet":
        pq.write_table(arrow, sink)
    else:
        raise ValueError(f"fmt must be one of {list(FORMATS)}, got {fmt!r}")
    return sink.getvalue()
