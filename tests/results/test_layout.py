"""The bundle format lives in one place: layout.py, built from the statistics game defines."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import workbench.results.layout as layout
from workbench.game import ROUND_STAT_FIELDS, RoundStats
from workbench.results import ROUND_COLUMNS, bundle, verify


def test_round_schema_is_built_from_game_statistics() -> None:
    assert ROUND_STAT_FIELDS == tuple(f.name for f in dataclasses.fields(RoundStats))
    assert tuple(layout.ROUND_SCHEMA.names) == ("round", *ROUND_STAT_FIELDS, "seconds")
    assert ROUND_COLUMNS == tuple(layout.ROUND_SCHEMA.names)
    assert verify.STAT_FIELDS is ROUND_STAT_FIELDS
    types = {f.name: str(f.type) for f in layout.ROUND_SCHEMA}
    assert types["n"] == "int64" and types["mean"] == "double"


def test_format_names_have_one_home() -> None:
    """The format's names are layout's; the reader takes what it uses and hands none on."""
    names = (
        "SCHEMA_VERSION",
        "MANIFEST",
        "CONFIG_FILE",
        "PERSONAS_FILE",
        "ROUNDS_FILE",
        "GROUPS_FILE",
        "RESPONSES_DIR",
        "FIGURES_DIR",
        "RESPONSE_SCHEMA",
        "REQUIRED_RESPONSE_COLUMNS",
        "ROUND_SCHEMA",
        "ROUND_COLUMNS",
        "response_table",
        "rounds_table",
    )
    for name in names:
        assert getattr(layout, name) is not None, name
    for name in ("ROUND_SCHEMA", "response_table", "rounds_table", "redact"):
        assert not hasattr(bundle, name), name
    assert bundle.LIST_COLUMNS and bundle.Bundle and bundle.list_bundles


def test_part_paths_round_trip(tmp_path: Path) -> None:
    path = layout.part_path(tmp_path, 12, 3)
    assert path == tmp_path / "responses" / "round-12" / "part-00003.parquet"
    assert layout.parse_part_path(layout.relative(tmp_path, path)) == (12, 3)
    assert layout.parse_part_path("responses/round-1/notes.txt") is None
    assert layout.parse_part_path("responses/round-x/part-00001.parquet") is None
    assert layout.is_round_dir(layout.round_dir(tmp_path, 4))
    assert layout.round_of_dir(layout.round_dir(tmp_path, 4)) == 4


def test_lock_and_temp_files_are_not_data(tmp_path: Path) -> None:
    assert layout.LOCK_FILE.startswith(".")
    for name in (layout.LOCK_FILE, ".x.parquet.tmp", "manifest.json", "config.yaml"):
        (tmp_path / name).write_text("x")
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "f.png").write_text("x")
    (tmp_path / "events.jsonl").write_text("{}\n")
    assert [p.name for p in layout.data_files(tmp_path)] == ["events.jsonl"]


def test_layout_imports_no_pandas_at_module_level() -> None:
    tree = ast.parse(Path(layout.__file__).read_text())
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] == "pandas"]


def test_no_file_name_literals_outside_layout() -> None:
    """The writer, reader, verify and replay spell no bundle file name themselves."""
    root = Path(layout.__file__).parents[1]
    names = [
        layout.MANIFEST,
        layout.CONFIG_FILE,
        layout.PERSONAS_FILE,
        layout.ROUNDS_FILE,
        layout.GROUPS_FILE,
        layout.EVENTS_FILE,
        layout.LOCK_FILE,
    ]
    for rel in ("results/writer.py", "results/verify.py", "results/replay.py", "llm/replay.py"):
        tree = ast.parse((root / rel).read_text())
        strings = {
            n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)
        }
        assert not strings.intersection(names), rel
