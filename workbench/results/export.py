"""A bundle as one tidy table for R, Stata and the like: one row per agent and finished round.

Columns (`tidy_schema`): `run_id`, `round`, `agent_id`, the persona columns (every attribute a
population gave its agents, and `model` where a run mixed models; not the persona's prose,
which the personas table holds), then the answer: `guess`, `status`, `latency_s`,
`prompt_tokens`, `completion_tokens`. A guess that is not a number is empty (null), never
NaN, which Stata would read as text. A persona column whose name is one of those is written
as `persona_<name>`.

`export_tidy` writes it a round at a time (`tidy_rounds`): the personas are read once
(without their prose), each round's answers are read, joined and written, then let go, so a
million agents over many rounds never sit in memory whole, let alone twice. The file appears
whole or not at all (written beside its place, then renamed).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from workbench.errors import ConfigError
from workbench.results.bundle import Bundle
from workbench.results.layout import RESPONSE_SCHEMA

__all__ = ["ANSWER_COLUMNS", "EXPORT_FORMATS", "export_tidy", "tidy_rounds", "tidy_schema"]

ANSWER_COLUMNS: tuple[str, ...] = (
    "guess",
    "status",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
)
"""The answer's columns in a tidy row (from the responses' schema)."""

KEY_COLUMNS: tuple[str, ...] = ("run_id", "round", "agent_id")
"""The columns that say whose answer a row is, first in every row."""

NOT_EXPORTED = frozenset({"agent_id", "persona"})
"""Persona columns not exported as attributes: the key, and the persona's prose."""

EXPORT_FORMATS: tuple[str, ...] = ("csv", "parquet")
"""The formats `export_tidy` writes."""


def _persona_names(bundle: Bundle) -> dict[str, str]:
    """The exported persona columns: name in the personas table -> name in the tidy table."""
    taken = set(KEY_COLUMNS) | set(ANSWER_COLUMNS)
    return {
        name: f"persona_{name}" if name in taken else name
        for name in bundle.persona_columns()
        if name not in NOT_EXPORTED
    }


def _plain(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column as CSV and Stata take it: categories decoded to their text."""
    if pa.types.is_dictionary(column.type):
        return column.cast(column.type.value_type)
    return column


def tidy_schema(bundle: Bundle) -> pa.Schema:
    """The tidy table's columns and types (see the module)."""
    names = _persona_names(bundle)
    personas = bundle.personas_table(["agent_id", *names]).slice(0, 0)
    fields = [pa.field("run_id", pa.string()), RESPONSE_SCHEMA.field("round")]
    fields.append(RESPONSE_SCHEMA.field("agent_id"))
    fields += [pa.field(names[n], _plain(personas.column(n)).type) for n in names]
    fields += [RESPONSE_SCHEMA.field(c) for c in ANSWER_COLUMNS]
    return pa.schema(fields)


def tidy_rounds(bundle: Bundle) -> Iterator[pa.Table]:
    """The tidy table one finished round at a time (`tidy_schema`), agents in id order."""
    schema = tidy_schema(bundle)
    names = _persona_names(bundle)
    personas = bundle.personas_table(["agent_id", *names])
    ids = personas.column("agent_id").combine_chunks()
    attributes = {names[n]: _plain(personas.column(n)) for n in names}
    for entry in bundle.rounds_done:
        number = int(entry["round"])
        answers = bundle.responses_table(number)  # sorted by agent_id
        at = pc.index_in(answers.column("agent_id"), value_set=ids)
        guess = answers.column("guess")
        columns = {
            "run_id": pa.array([bundle.run_id] * answers.num_rows, pa.string()),
            "round": answers.column("round"),
            "agent_id": answers.column("agent_id"),
            **{name: column.take(at) for name, column in attributes.items()},
            "guess": pc.if_else(pc.is_nan(guess), pa.scalar(None, pa.float64()), guess),
            **{c: answers.column(c) for c in ANSWER_COLUMNS if c != "guess"},
        }
        yield pa.table(columns, schema=schema)


def tidy_table(bundle: Bundle) -> pd.DataFrame:
    """The whole tidy table in memory (a page's view, a notebook); files: `export_tidy`."""
    tables = list(tidy_rounds(bundle))
    table = pa.concat_tables(tables) if tables else tidy_schema(bundle).empty_table()
    return table.to_pandas()


def export_tidy(bundle: Bundle | str | Path, out: str | Path, fmt: str | None = None) -> int:
    """Write `bundle`'s tidy table (see the module) to `out` as CSV or Parquet (`fmt`; None:
    from out's suffix, else CSV), a round at a time; the number of rows written. ConfigError
    naming the format when it is neither."""
    opened = bundle if isinstance(bundle, Bundle) else Bundle.open(bundle)
    out = Path(out)
    fmt = fmt or (out.suffix[1:].lower() if out.suffix[1:].lower() in EXPORT_FORMATS else "csv")
    if fmt not in EXPORT_FORMATS:
        raise ConfigError(f"format: {fmt!r} is not an export format; one of {list(EXPORT_FORMATS)}")
    schema = tidy_schema(opened)
    out.parent.mkdir(parents=True, exist_ok=True)
    name = out.with_name(f".{out.name}.{uuid.uuid4().hex}.part")  # the umask's permissions
    rows = 0
    try:
        writer: pa_csv.CSVWriter | pq.ParquetWriter = (
            pa_csv.CSVWriter(str(name), schema)
            if fmt == "csv"
            else pq.ParquetWriter(str(name), schema)
        )
        with writer:
            for table in tidy_rounds(opened):
                writer.write_table(table)
                rows += table.num_rows
        os.replace(name, out)
    except BaseException:
        name.unlink(missing_ok=True)
        raise
    return rows
