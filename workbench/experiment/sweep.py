"""Sweeps: run every cell of a grid over a base config into one experiment folder.

Every cell's config is validated (and checked against its population) before anything runs or
is written. Then the cells run in grid order, each with `Simulation` into `cells/<cell id>`, and
the index is rewritten after each one. On a rerun of the same sweep:

- a complete cell is kept as it is (its bundle is not touched);
- a failed, cancelled or dead (killed) cell is resumed with `Simulation.resume` from its last
  complete round, so it ends with the answers an uninterrupted run gives;
- a cell whose folder cannot be resumed (no manifest, no personas: its process died while
  creating it) is moved to `stale/` and started again;
- a cell that fails (a model error, too many failed answers) is recorded as failed in the index
  and the sweep goes on; the next rerun retries it.

Ctrl-C (KeyboardInterrupt or asyncio.CancelledError) marks the cell in flight cancelled,
rewrites the index and propagates; a rerun finishes the sweep.

A sweep can also fork one parent bundle many ways (`ForkFrom` in place of the config): the base
config is the parent's, and every cell is `Simulation.fork(parent, at_round, its overrides)`,
sharing the parent's rounds before `at_round`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.config import RunConfig, load_run_config, resolve_population
from workbench.errors import BundleError, BundleLockedError, ConfigError, one_line
from workbench.experiment.folder import Experiment
from workbench.experiment.grid import Cell, GridSpec, expand_grid, load_grid, stored_config
from workbench.results import Bundle
from workbench.results.run_statuses import RunStatus
from workbench.runtime import Simulation


@dataclass(frozen=True)
class ForkFrom:
    """Where a forking sweep starts: every cell forks `parent` at `at_round`."""

    parent: Path
    at_round: int

    def start(self, cell: Cell) -> Simulation:
        """The cell's run: a fork of the parent with the cell's overrides."""
        return Simulation.fork(self.parent, self.at_round, cell.overrides)


Base = RunConfig | str | Path | ForkFrom
"""What a sweep varies: a config (object or YAML path), or a parent bundle to fork."""

KEPT, RAN, RESUMED, RESTARTED = "kept", "ran", "resumed", "restarted"
"""What a sweep did with a cell: kept a complete bundle, ran it, resumed it, started it again."""


@dataclass(frozen=True)
class CellResult:
    """A cell the sweep finished with: what it did (`action`), and the cell's index row."""

    cell: Cell
    number: int
    total: int
    action: str
    row: Mapping[str, Any]

    @property
    def status(self) -> str:
        """The cell's bundle status (complete, failed, cancelled, running, dead) or pending."""
        return str(self.row.get("status"))

    @property
    def error(self) -> str | None:
        """What stopped the cell, on one line (None when it completed)."""
        return self.row.get("error")

    def summary(self) -> str:
        """One line for a console: `[3/8] complete ran <cell id>  mean=.. target=.. n_valid=..`."""
        head = f"[{self.number}/{self.total}] {self.status:<9} {self.action:<9} {self.cell.id}"
        if self.status != RunStatus.COMPLETE:
            return f"{head}  {self.error or ''}".rstrip()
        row = self.row
        return (
            f"{head}  mean={row['mean']:.2f} target={row['target']:.2f} "
            f"n_valid={row['n_valid']} ({row['seconds']:.2f} s)"
        )


CellCallback = Callable[[CellResult], None]


def plan(
    config: Base, grid: GridSpec | Mapping[str, Any] | str | Path
) -> tuple[RunConfig, list[Cell]]:
    """The base config and the grid's cells, every one validated and checked (a fork's cells
    against their parent too): ConfigError naming the first bad cell and key before anything
    is written."""
    if isinstance(config, ForkFrom):
        base = Bundle.open(config.parent).config
    else:
        base = config if isinstance(config, RunConfig) else load_run_config(config)
    base = resolve_population(base)
    spec, grid_dir = load_grid(grid)
    cells = expand_grid(base, spec, base_dir=grid_dir)
    for number, cell in enumerate(cells, 1):
        assert cell.run_config is not None
        try:
            if isinstance(config, ForkFrom):
                config.start(cell).check()
            else:
                Simulation(cell.run_config).check()
        except ConfigError as exc:
            raise ConfigError(f"grid cell {number} of {len(cells)} ({cell.id}): {exc}") from None
    return base, cells


def sweep(
    config: Base,
    grid: GridSpec | Mapping[str, Any] | str | Path,
    out_dir: str | Path,
    *,
    progress: bool = False,
    on_cell: CellCallback | None = None,
) -> Experiment:
    """Run every cell of `grid` over `config` (or forks of a parent: `ForkFrom`) into the
    experiment folder `out_dir`.

    `grid` is a GridSpec, its data ({"grid": {...}, "cells": [...]}) or a YAML file; rerunning
    the same sweep keeps complete cells and resumes the rest; `on_cell(result)` is called as
    each cell finishes (or is kept). Returns the experiment; its index says which cells failed.
    """
    base, cells = plan(config, grid)
    experiment = Experiment.prepare(out_dir, stored_config(base), cells)
    rows = experiment.rows()
    experiment.write_index(rows)
    for number, cell in enumerate(cells, 1):
        try:
            action, row = _run_cell(experiment, cell, progress, _starter(config))
        except BaseException:  # Ctrl-C, or another process writes the bundle: index first
            rows[cell.id] = experiment.row(cell)
            experiment.write_index(rows)
            raise
        rows[cell.id] = row
        experiment.write_index(rows)
        if on_cell is not None:
            on_cell(CellResult(cell, number, len(cells), action, row))
    return experiment


Starter = Callable[[Cell], Simulation]
"""How a sweep starts a cell's run."""


def _starter(config: Base) -> Starter:
    """A fork of the parent per cell, or a run of the cell's own config."""
    if isinstance(config, ForkFrom):
        return config.start

    def start(cell: Cell) -> Simulation:
        assert cell.run_config is not None
        return Simulation(cell.run_config)

    return start


def _simulation(
    experiment: Experiment, cell: Cell, start: Starter
) -> tuple[str, Simulation | None]:
    """What to do with a cell's folder as found: keep it, resume it, or start it (again)."""
    path = experiment.cell_path(cell)
    if not (path.exists() or path.is_symlink()):
        return RAN, start(cell)
    try:
        if Bundle.open(path).is_complete:
            return KEPT, None
        return RESUMED, Simulation.resume(path)
    except BundleLockedError:
        raise
    except BundleError:  # died while being created: nothing to resume from
        experiment.set_aside(cell)
        return RESTARTED, start(cell)


def _run_cell(
    experiment: Experiment, cell: Cell, progress: bool, start: Starter
) -> tuple[str, dict[str, Any]]:
    """Run (or keep, or resume) one cell; its action and index row. A failure is recorded in
    the row, not raised; BaseExceptions (Ctrl-C) and a locked bundle propagate."""
    action, sim = _simulation(experiment, cell, start)
    if sim is None:
        return action, experiment.row(cell)
    path = experiment.cell_path(cell)
    try:
        sim.run(out_dir=path.parent, run_id=cell.id, progress=progress)
    except BundleLockedError:
        raise
    except Exception as exc:  # the bundle (if any) is marked failed; the sweep goes on
        return action, experiment.row(cell, error=one_line(exc))
    return action, experiment.row(cell)
