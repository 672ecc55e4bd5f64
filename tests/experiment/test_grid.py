"""Grids: the YAML format, the order of cells, their ids, and bad grids refused up front with
one ConfigError naming the cell and the key, before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from workbench.errors import ConfigError
from workbench.experiment import expand_grid, load_grid, sweep

GRID_YAML = """\
grid:
  game.ratio: ["2/3", "1/2"]
  game.prompt: [{style: direct}, {style: step_by_step, rational_note: true}]
  n_agents: 12
cells:
  - {seed: 1, model.temperature: 0.5}
"""


def test_a_yaml_grid_expands_in_order(level_k_config, tmp_path: Path) -> None:
    path = tmp_path / "grid.yaml"
    path.write_text(GRID_YAML, encoding="utf-8")
    spec, folder = load_grid(path)
    assert folder == tmp_path and spec.size() == 5
    cells = expand_grid(level_k_config, spec)
    assert [c.overrides.get("game.ratio") for c in cells] == ["2/3", "2/3", "1/2", "1/2", None]
    assert [c.run_config.n_agents for c in cells] == [12, 12, 12, 12, 10]
    prompts = [c.run_config.game.prompt for c in cells]
    assert [p.rational_note for p in prompts] == [False, True, False, True, False]
    assert cells[4].run_config.model.temperature == 0.5 and cells[4].run_config.seed == 1
    assert cells[1].id.startswith(
        "ratio-2_3__prompt-style_step_by_step_rational_note_true__n_agents-12-"
    )
    assert cells[4].id.startswith("seed-1__temperature-0.5-")
    again = expand_grid(level_k_config, spec)
    assert [c.id for c in again] == [c.id for c in cells]  # deterministic


def test_equal_values_written_differently_are_one_cell(level_k_config) -> None:
    with pytest.raises(ConfigError, match="grid cell 2 of 2 .*the same config as grid cell 1"):
        expand_grid(level_k_config, load_grid({"grid": {"game.ratio": ["1/2", 0.5]}})[0])


BAD_GRIDS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "unknown-key": (
        {"grid": {"game.ratoi": [0.5]}},
        ["grid cell 1 of 1 (game.ratoi=0.5)", "game.ratoi: unknown key"],
    ),
    "value-rejected": (
        {"grid": {"seed": [1], "game.ratio": [0.5, 2]}},
        ["grid cell 2 of 2 (seed=1, game.ratio=2)", "game.ratio: must be in (0, 1], got 2"],
    ),
    "explicit-cell": (
        {"grid": {"seed": [1]}, "cells": [{"n_agents": 0}]},
        ["grid cell 2 of 2 (n_agents=0)", "n_agents: must be at least 1"],
    ),
    "not-a-section": (
        {"cells": [{"seed.value": 1}]},
        ["grid cell 1 of 1", "seed.value: seed holds 7, not a section"],
    ),
    "population-check": (
        {"grid": {"policy.attribute": ["education", "city"]}},
        ["grid cell 2 of 2", "policy.attribute: 'city' is not a population dimension"],
    ),
    "empty-values": ({"grid": {"seed": []}}, ["sweep grid: grid: seed: give at least one value"]),
    "no-cells": ({}, ["grid: no cells"]),
    "output": ({"grid": {"output.dir": ["x"]}}, ["output.dir: the sweep's folder decides"]),
    "overlap": (
        {"grid": {"game": [{}], "game.ratio": [0.5]}},
        ["game and game.ratio overlap"],
    ),
    "bad-key": ({"grid": {"game..ratio": [0.5]}}, ["'game..ratio' is not a dotted config key"]),
    "top-level-typo": ({"gird": {"seed": [1]}}, ["gird: unknown key"]),
    "too-many": (
        {"grid": {f"models.m{i}.temperature": list(range(10)) for i in range(5)}},
        ["100,000 cells, more than 10,000"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_GRIDS))
def test_a_bad_grid_is_one_config_error_and_writes_nothing(
    case: str, make_config, tmp_path: Path
) -> None:
    grid, needles = BAD_GRIDS[case]
    level_k_config = make_config(policy={"kind": "level_k", "attribute": "education"})
    with pytest.raises(ConfigError) as info:
        sweep(level_k_config, grid, tmp_path / "exp")
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)
    assert not (tmp_path / "exp").exists()
