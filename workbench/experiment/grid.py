"""Sweep grids: which config overrides a sweep runs, expanded into cells with stable ids.

A grid file (YAML) has two optional sections:

    grid:                          # the cartesian product: first key slowest, values in order
      game.prompt.style: [direct, step_by_step]
      game.ratio: ["2/3", "1/2"]
      seed: [1, 2]
    cells:                         # explicit cells after the product, each base + its own keys
      - {model.temperature: 0.0, seed: 1}

A key is a dotted path into the run config and its value replaces the base config's value there
(a mapping replaces the whole section). In `grid` a list holds the alternatives and a scalar is
one fixed value; write `[[a, b]]` for a single list value. A cell's id is its overrides as
readable text plus a hash of its whole config, so the same config always lands in the same
folder. Pure: no running here (see `sweep`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, JsonValue, field_validator

from workbench.config import RunConfig, StrictModel, read_yaml, resolve_population, validate
from workbench.config.overrides import apply_overrides, check_keys
from workbench.errors import ConfigError
from workbench.results.redact import redact

MAX_CELLS = 10_000
"""Most cells one grid may expand to (a typo'd product must not allocate millions)."""

UNSWEPT = ("output",)
"""Top-level sections a grid may not override: the sweep's folder decides where bundles go."""

VALUE_SLUG = 40
READABLE_SLUG = 120
"""Most characters of one value, and of all overrides, in a cell id (the hash keeps it unique)."""


class GridSpec(StrictModel):
    """A sweep's grid: a cartesian product of overrides, and explicit cells."""

    grid: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="dotted config key -> list of values (a scalar: one value); the sweep runs "
        "their cartesian product, the first key varying slowest",
    )
    cells: list[dict[str, JsonValue]] = Field(
        default_factory=list,
        description="explicit cells after the product, each the base config plus its overrides",
    )

    @field_validator("grid")
    @classmethod
    def _alternatives(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        check_keys(value, "grid", UNSWEPT)
        for key, values in value.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"{key}: give at least one value (an empty list runs nothing)")
        return value

    @field_validator("cells")
    @classmethod
    def _cell_keys(cls, value: list[dict[str, JsonValue]]) -> list[dict[str, JsonValue]]:
        for number, overrides in enumerate(value, 1):
            check_keys(overrides, f"cell {number}", UNSWEPT)
        return value

    def size(self) -> int:
        """How many cells the grid expands to."""
        product = math.prod(len(v) if isinstance(v, list) else 1 for v in self.grid.values())
        return (product if self.grid else 0) + len(self.cells)


@dataclass(frozen=True)
class Cell:
    """One cell of a sweep: its id, the overrides as written, its resolved config as JSON data
    (secrets redacted), and, when planned from a grid, the RunConfig it runs."""

    id: str
    overrides: dict[str, Any]
    config: dict[str, Any]
    run_config: RunConfig | None = field(default=None, compare=False, repr=False)

    @property
    def bundle(self) -> str:
        """The cell's bundle, relative to the experiment folder."""
        return f"cells/{self.id}"

    def value(self, key: str) -> Any:
        """The cell's config value at dotted `key` (None where its config has none)."""
        return value_at(self.config, key)

    def to_dict(self) -> dict[str, Any]:
        """The cell as stored in experiment.json."""
        return {"id": self.id, "overrides": self.overrides, "config": self.config}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cell:
        """A cell as stored in experiment.json."""
        return cls(str(data["id"]), dict(data["overrides"]), dict(data["config"]))


def load_grid(grid: GridSpec | Mapping[str, Any] | str | Path) -> tuple[GridSpec, Path | None]:
    """A grid from a spec, plain data or a YAML file, and the folder its relative paths start in."""
    if isinstance(grid, GridSpec):
        return grid, None
    if isinstance(grid, str | Path):
        return validate(GridSpec, read_yaml(grid), str(grid)), Path(grid).parent
    return validate(GridSpec, dict(grid), "sweep grid"), None


def stored_config(config: RunConfig) -> dict[str, Any]:
    """A config as a sweep stores and compares it: JSON data, secrets redacted, no `output`."""
    data = redact(config.model_dump(mode="json"))
    for key in UNSWEPT:
        data.pop(key, None)
    return data


def value_at(data: Mapping[str, Any], key: str) -> Any:
    """The value at dotted `key` in nested mappings (None where a part is missing)."""
    value: Any = data
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as {dotted key: value}; lists and other values are leaves."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _slug(text: str, limit: int) -> str:
    """Text with runs of characters a folder name should not hold as `_`, cut to `limit`."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", text).strip("_.-")[:limit] or "x"


def _readable(value: Any) -> str:
    """A value as written, for a cell id: text as is, data as compact JSON without quotes."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":")).replace('"', "").strip("{}[]")


def cell_id(overrides: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """`style-direct__ratio-2_3__seed-1-<8 hex>`: each override's last key part and value, then
    a hash of the whole stored config (so equal configs share an id, different ones never do)."""
    parts = [
        f"{_slug(key.rsplit('.', 1)[-1], VALUE_SLUG)}-{_slug(_readable(v), VALUE_SLUG)}"
        for key, v in overrides.items()
    ]
    readable = "__".join(parts)[:READABLE_SLUG].rstrip("_.-") or "base"
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode("utf-8")).hexdigest()
    return f"{readable}-{digest[:8]}"


def cell_label(number: int, total: int, overrides: Mapping[str, Any]) -> str:
    """How errors name a cell: `grid cell 3 of 8 (game.ratio=2, seed=1)`."""
    text = ", ".join(f"{k}={json.dumps(v)}" for k, v in overrides.items())
    return f"grid cell {number} of {total} ({text or 'no overrides'})"


def grid_overrides(grid: GridSpec) -> list[dict[str, Any]]:
    """Every cell's overrides in order: the product (first key slowest), then explicit cells."""
    cells: list[dict[str, Any]] = []
    if grid.grid:
        keys = list(grid.grid)
        choices = [v if isinstance(v, list) else [v] for v in grid.grid.values()]
        cells = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]
    return cells + [dict(c) for c in grid.cells]


def expand_grid(base: RunConfig, grid: GridSpec, *, base_dir: Path | None = None) -> list[Cell]:
    """The grid's cells over `base`, each config validated; one ConfigError naming the first bad
    cell and key, or two cells with the same config, before anything runs.

    A `population` path in an override is read relative to `base_dir` (the grid file's folder).
    """
    total = grid.size()
    if total == 0:
        raise ConfigError("grid: no cells; give a `grid:` of key: [values] or a `cells:` list")
    if total > MAX_CELLS:
        raise ConfigError(f"grid: {total:,} cells, more than {MAX_CELLS:,}; split the sweep")
    base = resolve_population(base)
    cells: list[Cell] = []
    seen: dict[str, int] = {}
    for number, overrides in enumerate(grid_overrides(grid), 1):
        label = cell_label(number, total, overrides)
        config = apply_overrides(base, overrides, label, base=base_dir, reserved=UNSWEPT)
        stored = stored_config(config)
        cell = Cell(cell_id(overrides, stored), overrides, stored, config)
        digest = cell.id.rsplit("-", 1)[-1]
        if digest in seen:
            raise ConfigError(
                f"{label}: the same config as grid cell {seen[digest]}; remove one of them"
            )
        seen[digest] = number
        cells.append(cell)
    return cells
