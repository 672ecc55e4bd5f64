"""Experiments: sweeps over config grids into one folder, and bundles compared side by side.

`grid` reads a grid and expands it into cells, `sweep` runs them (one bundle per cell, an index),
`folder` is the experiment folder's format and `Experiment` its reader, `compare` lines bundles
up. The names below load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

_HOMES: dict[str, str] = {
    "Cell": "workbench.experiment.grid",
    "GridSpec": "workbench.experiment.grid",
    "expand_grid": "workbench.experiment.grid",
    "load_grid": "workbench.experiment.grid",
    "Experiment": "workbench.experiment.folder",
    "configure": "workbench.experiment.configure",
    "model_overrides": "workbench.experiment.configure",
    "CellResult": "workbench.experiment.sweep",
    "plan": "workbench.experiment.sweep",
    "sweep": "workbench.experiment.sweep",
    "reproduce": "workbench.experiment.reproduce",
    "compare_rounds": "workbench.experiment.compare",
    "config_differences": "workbench.experiment.compare",
    "model_differences": "workbench.experiment.compare",
}

__all__ = [
    "Cell",
    "CellResult",
    "Experiment",
    "GridSpec",
    "compare_rounds",
    "config_differences",
    "configure",
    "expand_grid",
    "load_grid",
    "model_differences",
    "model_overrides",
    "plan",
    "reproduce",
    "sweep",
]

__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())

if TYPE_CHECKING:
    from workbench.experiment.compare import compare_rounds, config_differences, model_differences
    from workbench.experiment.configure import configure, model_overrides
    from workbench.experiment.folder import Experiment
    from workbench.experiment.grid import Cell, GridSpec, expand_grid, load_grid
    from workbench.experiment.reproduce import reproduce
    from workbench.experiment.sweep import CellResult, plan, sweep
