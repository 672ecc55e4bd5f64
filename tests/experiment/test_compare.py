"""`config_differences` and `compare_rounds`: only the keys that differ, rounds side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import BundleError
from workbench.experiment import Experiment, compare_rounds, config_differences, sweep


def test_differences_and_rounds_of_a_sweep(level_k_config, tmp_path: Path) -> None:
    grid = {"grid": {"game.ratio": ["2/3", "1/2"]}, "cells": [{"n_agents": 12, "seed": 9}]}
    experiment = sweep(level_k_config, grid, tmp_path / "exp")
    bundles = experiment.bundles()
    differ = config_differences(bundles)
    assert list(differ.columns) == list(bundles)
    assert list(differ.index) == ["seed", "n_agents", "game.ratio"]
    assert list(differ.loc["n_agents"]) == [10, 10, 12]
    rounds = compare_rounds(list(bundles.values()))  # labelled by run id (= cell id)
    assert list(rounds.index) == [1, 2]
    assert list(rounds.columns.get_level_values(0).unique()) == list(bundles)
    index = experiment.index().set_index("cell")
    for cell in bundles:
        assert rounds[(cell, "mean")].iloc[-1] == pytest.approx(index.loc[cell, "mean"])
    same = config_differences([bundles[next(iter(bundles))]] * 2)
    assert len(same) == 0 and list(same.columns)[1].endswith("#2")


def test_open_refuses_a_folder_that_is_no_experiment(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not an experiment folder"):
        Experiment.open(tmp_path)
