"""The experiment folder a sweep writes, and `Experiment`, which reads it back.

    <dir>/
      experiment.json   schema version, the base config, every cell (id, overrides, config)
      index.parquet     one row per cell: cell, one column per override key, bundle, status,
                        rounds_done and the last round's mean, target, n_valid, n_failed,
                        the rounds' total seconds, error (readable with pandas alone)
      cells/<cell id>/  one result bundle per cell
      stale/            bundles of cells that could not be resumed and were started again

Both files are rewritten atomically, so a sweep stopped at any moment leaves a consistent folder.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench._files import atomic_write_text
from workbench.errors import BundleError, ConfigError
from workbench.experiment.grid import Cell, flatten
from workbench.results import Bundle
from workbench.results.run_statuses import RunStatus

if TYPE_CHECKING:
    import pandas as pd

EXPERIMENT_FILE = "experiment.json"
INDEX_FILE = "index.parquet"
CELLS_DIR = "cells"
STALE_DIR = "stale"
SCHEMA_VERSION = 1

STAT_COLUMNS: dict[str, str] = {
    "status": "str",
    "rounds_done": "Int64",
    "mean": "float64",
    "target": "float64",
    "n_valid": "Int64",
    "n_failed": "Int64",
    "seconds": "float64",
    "error": "str",
}
"""The index's columns after the overrides and the bundle path, with their dtypes."""

PENDING = "pending"
"""The status of a cell whose bundle was never started."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two configs."""
    left, right = flatten(a), flatten(b)
    return [k for k in dict.fromkeys([*left, *right]) if left.get(k) != right.get(k)]


def _column(values: list[Any]) -> list[Any]:
    """An override column that Parquet can hold: data as JSON text, mixed types as text."""
    present = [v for v in values if v is not None]
    if any(isinstance(v, dict | list) for v in present):
        return [None if v is None else json.dumps(v) for v in values]
    kinds = {float if type(v) is int else type(v) for v in present}
    if len(kinds) > 1:
        return [None if v is None else str(v) for v in values]
    return values


def bundle_row(path: Path) -> dict[str, Any]:
    """A cell's status and statistics from its bundle (last round's mean, target, ...)."""
    bundle = Bundle.open(path)
    rounds = bundle.rounds()
    row: dict[str, Any] = {"status": bundle.status, "rounds_done": len(rounds)}
    if len(rounds):
        last = rounds.iloc[-1]
        row |= {k: float(last[k]) for k in ("mean", "target")}
        row |= {k: int(last[k]) for k in ("n_valid", "n_failed")}
        row["seconds"] = float(rounds["seconds"].sum())
    return row | {"error": bundle.error}


class Experiment:
    """A sweep's folder: its cells, their bundles and the index (`Experiment.open(dir)`)."""

    def __init__(self, path: Path, manifest: dict[str, Any]) -> None:
        self.path = path
        self.manifest = manifest

    @classmethod
    def open(cls, path: str | Path) -> Experiment:
        """The experiment in folder `path`; BundleError when it is not one."""
        path = Path(path)
        file = path / EXPERIMENT_FILE
        if not file.is_file():
            raise BundleError(f"{path}: not an experiment folder (no {EXPERIMENT_FILE})")
        try:
            manifest = json.loads(file.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BundleError(f"{file}: invalid JSON ({exc}); restore or remove it") from None
        if not isinstance(manifest, dict) or manifest.get("schema_version") != SCHEMA_VERSION:
            raise BundleError(f"{file}: not an experiment of schema version {SCHEMA_VERSION}")
        return cls(path, manifest)

    @classmethod
    def prepare(cls, path: str | Path, base: dict[str, Any], cells: Sequence[Cell]) -> Experiment:
        """The folder for a sweep of `cells` over `base` (a stored config), created or extended.

        An existing experiment gains the cells it lacks; ConfigError, before anything is
        written, for one made from another base config, or for a folder that holds other files.
        """
        path = Path(path)
        if (path / EXPERIMENT_FILE).is_file():
            experiment = cls.open(path)
            differ = _differing(experiment.manifest.get("base_config", {}), base)
            if differ:
                raise ConfigError(
                    f"--out {path}: this experiment was made from another base config "
                    f"(it differs at {', '.join(differ[:5])}); run that config again, or "
                    "choose a new folder for this one"
                )
            known = {cell.id for cell in experiment.cells}
            stored = [*experiment.manifest["cells"]]
            stored += [c.to_dict() for c in cells if c.id not in known]
            manifest = {**experiment.manifest, "cells": stored}
        else:
            if path.exists() and (not path.is_dir() or any(path.iterdir())):
                what = "is a file" if not path.is_dir() else "holds other files"
                raise ConfigError(
                    f"--out {path}: {what} and is no experiment; choose a new or empty folder"
                )
            manifest = {
                "schema_version": SCHEMA_VERSION,
                "created_at": _now(),
                "base_config": base,
                "cells": [c.to_dict() for c in cells],
            }
        keys = [*manifest.get("keys", [])]
        keys += [k for c in cells for k in c.overrides if k not in keys]
        manifest = {**manifest, "keys": list(dict.fromkeys(keys)), "updated_at": _now()}
        experiment = cls(path, manifest)
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path / EXPERIMENT_FILE, json.dumps(manifest, indent=1) + "\n")
        return experiment

    @property
    def cells(self) -> list[Cell]:
        """Every cell of the experiment, in the order they were added."""
        return [Cell.from_dict(c) for c in self.manifest.get("cells", [])]

    @property
    def keys(self) -> list[str]:
        """The override keys of all cells, in the order first given: the index's columns."""
        return list(self.manifest.get("keys", []))

    @property
    def index_path(self) -> Path:
        """The index file (Parquet)."""
        return self.path / INDEX_FILE

    def cell_path(self, cell: Cell) -> Path:
        """Where the cell's bundle lives."""
        return self.path / cell.bundle

    def row(self, cell: Cell, error: str | None = None) -> dict[str, Any]:
        """The cell's index row as its bundle says (pending without one; failed with `error`)."""
        path = self.cell_path(cell)
        if path.exists():
            try:
                stats = bundle_row(path)
            except BundleError as exc:
                stats = {"status": RunStatus.FAILED, "error": str(exc)}
            if error is not None and not stats.get("error"):
                stats["error"] = error
        else:
            stats = {"status": PENDING if error is None else RunStatus.FAILED, "error": error}
        return {"cell": cell.id, "bundle": cell.bundle, **stats}

    def rows(self) -> dict[str, dict[str, Any]]:
        """Every cell's row from disk, by cell id."""
        return {cell.id: self.row(cell) for cell in self.cells}

    def write_index(self, rows: Mapping[str, Mapping[str, Any]]) -> Path:
        """Write the index atomically: one row per cell in order, overrides as columns."""
        import pandas as pd

        from workbench.results.writer import write_frame

        cells = self.cells
        frame = pd.DataFrame({"cell": [c.id for c in cells]})
        for key in self.keys:
            frame[key] = _column([c.value(key) for c in cells])
        frame["bundle"] = [c.bundle for c in cells]
        for name, dtype in STAT_COLUMNS.items():
            values = [rows.get(c.id, {}).get(name) for c in cells]
            frame[name] = pd.array(values, dtype=object).astype(dtype)
        return write_frame(frame, self.index_path)

    def index(self) -> pd.DataFrame:
        """The index: one row per cell (see the module's docstring for its columns)."""
        import pandas as pd

        if not self.index_path.is_file():
            raise BundleError(f"{self.index_path}: missing; rerun the sweep to write it")
        return pd.read_parquet(self.index_path)

    def bundles(self) -> dict[str, Bundle]:
        """The bundles of the cells that have one, by cell id, in cell order."""
        found = {}
        for cell in self.cells:
            path = self.cell_path(cell)
            if path.is_dir():
                found[cell.id] = Bundle.open(path)
        return found

    def set_aside(self, cell: Cell) -> Path:
        """Move the cell's bundle to stale/ (it could not be resumed) and return where it went."""
        stale = self.path / STALE_DIR
        stale.mkdir(exist_ok=True)
        number = 1
        while (stale / f"{cell.id}.{number}").exists():
            number += 1
        target = stale / f"{cell.id}.{number}"
        self.cell_path(cell).rename(target)
        return target

    def __repr__(self) -> str:
        return f"Experiment({str(self.path)!r}, cells={len(self.manifest.get('cells', []))})"
