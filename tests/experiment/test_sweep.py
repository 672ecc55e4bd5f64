"""Sweeps end to end on the level-k policy (real runs, no model): one bundle per cell and an
index; a rerun keeps complete cells untouched, resumes an interrupted one to the answers an
uninterrupted sweep gives, retries a failed one, and starts again one that cannot be resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from workbench.errors import ConfigError, ModelError
from workbench.experiment import Experiment, sweep
from workbench.results import Bundle, verify_bundle


def interrupt(number: int, stats: Any, seconds: float) -> None:
    """An on_round callback: Ctrl-C after the first round."""
    raise KeyboardInterrupt


def model_dies(number: int, stats: Any, seconds: float) -> None:
    """An on_round callback: the model goes away after the first round."""
    raise ModelError("the model server went away")


def stamps(folder: Path) -> dict[str, int]:
    """Every file under the folder's cells/ with its modification time in ns."""
    return {str(p): p.stat().st_mtime_ns for p in (folder / "cells").rglob("*") if p.is_file()}


def answers(experiment: Experiment) -> dict[str, pd.DataFrame]:
    """Each cell's responses without the column that measures time."""
    return {
        cell: bundle.responses().drop(columns="latency_s")
        for cell, bundle in experiment.bundles().items()
    }


def test_a_sweep_runs_every_cell_into_one_folder(level_k_config, grid, tmp_path: Path) -> None:
    experiment = sweep(level_k_config, grid, tmp_path / "exp")
    index = pd.read_parquet(tmp_path / "exp" / "index.parquet")  # pandas alone
    assert len(index) == 8 and list(index["status"]) == ["complete"] * 8
    assert list(index.columns[:5]) == ["cell", "game.prompt.style", "game.ratio", "seed", "bundle"]
    assert {"mean", "target", "n_valid", "n_failed", "seconds", "rounds_done"} <= set(index)
    assert list(index["game.prompt.style"]) == ["direct"] * 4 + ["step_by_step"] * 4
    assert list(index["seed"]) == [1, 2] * 4
    assert index["cell"].is_unique and (index["n_valid"] == 10).all()
    assert index["cell"][0].startswith("style-direct__ratio-2_3__seed-1-")
    for row in index.to_dict("records"):
        bundle = Bundle.open(tmp_path / "exp" / row["bundle"])
        assert verify_bundle(bundle.path).ok
        config = bundle.config
        assert config.game.prompt.style == row["game.prompt.style"]
        assert config.game.ratio == pytest.approx(row["game.ratio"])
        assert config.seed == row["seed"]
        assert bundle.rounds()["mean"].iloc[-1] == pytest.approx(row["mean"])
    assert len(experiment.cells) == 8 and list(experiment.bundles()) == list(index["cell"])
    pd.testing.assert_frame_equal(Experiment.open(tmp_path / "exp").index(), index)


def test_a_second_run_rewrites_no_bundle(level_k_config, grid, tmp_path: Path, hook_runs) -> None:
    sweep(level_k_config, grid, tmp_path / "exp")
    before = stamps(tmp_path / "exp")
    calls = hook_runs()
    seen = []
    sweep(level_k_config, grid, tmp_path / "exp", on_cell=seen.append)
    assert calls == [] and stamps(tmp_path / "exp") == before
    assert [r.action for r in seen] == ["kept"] * 8
    assert [r.status for r in seen] == ["complete"] * 8


def test_an_interrupted_sweep_completes_on_rerun_with_the_same_answers(
    level_k_config, grid, tmp_path: Path, hook_runs
) -> None:
    hook_runs({4: interrupt})
    with pytest.raises(KeyboardInterrupt):
        sweep(level_k_config, grid, tmp_path / "exp")
    index = Experiment.open(tmp_path / "exp").index()
    assert list(index["status"]) == ["complete"] * 3 + ["cancelled"] + ["pending"] * 4
    assert index["rounds_done"][3] == 1
    seen = []
    resumed = sweep(level_k_config, grid, tmp_path / "exp", on_cell=seen.append)
    assert [r.action for r in seen] == ["kept"] * 3 + ["resumed"] + ["ran"] * 4
    assert list(resumed.index()["status"]) == ["complete"] * 8
    whole = sweep(level_k_config, grid, tmp_path / "whole")
    for (cell, got), (same, want) in zip(
        answers(resumed).items(), answers(whole).items(), strict=True
    ):
        assert cell == same
        pd.testing.assert_frame_equal(got, want)


def test_a_failed_cell_is_recorded_and_retried(
    level_k_config, grid, tmp_path: Path, hook_runs
) -> None:
    calls = hook_runs({2: model_dies})
    experiment = sweep(
        level_k_config, grid, tmp_path / "exp"
    )  # a failed cell does not stop the sweep
    index = experiment.index()
    assert list(index["status"]) == ["complete", "failed"] + ["complete"] * 6
    assert "the model server went away" in index["error"][1]
    seen = []
    calls.clear()
    sweep(level_k_config, grid, tmp_path / "exp", on_cell=seen.append)
    assert calls == [1] and seen[1].action == "resumed"
    assert list(experiment.index()["status"]) == ["complete"] * 8


def test_a_cell_that_cannot_be_resumed_starts_again(level_k_config, grid, tmp_path: Path) -> None:
    experiment = sweep(level_k_config, grid, tmp_path / "exp")
    cell = experiment.cells[5]
    (experiment.cell_path(cell) / "manifest.json").unlink()  # died while being created
    seen = []
    sweep(level_k_config, grid, tmp_path / "exp", on_cell=seen.append)
    assert seen[5].action == "restarted" and seen[5].status == "complete"
    assert (tmp_path / "exp" / "stale" / f"{cell.id}.1" / "personas.parquet").is_file()
    assert verify_bundle(experiment.cell_path(cell)).ok


def test_a_changed_grid_adds_its_new_cells(level_k_config, tmp_path: Path, hook_runs) -> None:
    sweep(level_k_config, {"grid": {"seed": [1, 2]}}, tmp_path / "exp")
    calls = hook_runs()
    bigger = {"grid": {"seed": [1, 2, 3]}, "cells": [{"game.ratio": "1/2"}]}
    experiment = sweep(level_k_config, bigger, tmp_path / "exp")
    assert len(calls) == 2
    index = experiment.index()
    assert list(index["seed"]) == [1, 2, 3, 7]  # the explicit cell keeps the base seed
    assert list(index["game.ratio"]) == pytest.approx([2 / 3] * 3 + [0.5])
    assert list(index["status"]) == ["complete"] * 4


def test_a_folder_of_another_base_config_is_refused(
    level_k_config, make_config, tmp_path: Path
) -> None:
    sweep(level_k_config, {"grid": {"seed": [1]}}, tmp_path / "exp")
    before = (tmp_path / "exp" / "experiment.json").read_bytes()
    other = make_config(policy={"kind": "level_k"}, n_agents=12)
    with pytest.raises(ConfigError, match=r"another base config \(it differs at n_agents\)"):
        sweep(other, {"grid": {"seed": [1]}}, tmp_path / "exp")
    assert (tmp_path / "exp" / "experiment.json").read_bytes() == before


def test_a_folder_that_holds_other_files_is_refused(level_k_config, tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="holds other files and is no experiment"):
        sweep(level_k_config, {"grid": {"seed": [1]}}, tmp_path / "results")
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["notes.txt"]
