"""`workbench sweep` and `workbench bundles compare`: a line per cell and the index, exit 1
naming a cell that did not complete, exit 2 for a bad grid with nothing written, and a
comparison that shows only the config keys that differ."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from cli_helpers import assert_user_error, in_process, workbench

from workbench.errors import ModelError
from workbench.experiment import sweep

ROOT = Path(__file__).resolve().parents[2]
EDUCATION = ROOT / "personas" / "paper-education.yaml"


def files(tmp_path: Path, grid: str) -> tuple[Path, Path]:
    """A 10-agent level-k base config and a grid file in `tmp_path`."""
    config = tmp_path / "base.yaml"
    config.write_text(
        f"name: base\nseed: 3\nn_agents: 10\npopulation: {json.dumps(str(EDUCATION))}\n"
        "game: {rounds: 2}\npolicy: {kind: level_k}\n",
        encoding="utf-8",
    )
    path = tmp_path / "ratios.yaml"
    path.write_text(grid, encoding="utf-8")
    return config, path


RATIOS = 'grid:\n  game.ratio: ["2/3", "1/2"]\n  seed: [1, 2]\n'


def test_sweep_prints_a_line_per_cell_and_the_index(tmp_path: Path) -> None:
    config, grid = files(tmp_path, RATIOS)
    result = workbench("sweep", config, "--grid", grid, cwd=tmp_path)  # a real subprocess
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 5 and lines[-1] == "index: results/ratios/index.parquet"
    assert lines[0].startswith("[1/4] complete  ran       ratio-2_3__seed-1-")
    assert "n_valid=10 " in lines[0]
    index = pd.read_parquet(tmp_path / "results" / "ratios" / "index.parquet")
    assert list(index["status"]) == ["complete"] * 4
    again = in_process(["sweep", config, "--grid", grid], cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.count("complete  kept") == 4


def test_sweep_exits_1_naming_the_cell_that_failed(tmp_path: Path, hook_runs) -> None:
    def model_dies(number: int, stats: Any, seconds: float) -> None:
        raise ModelError("the model server went away")

    hook_runs({2: model_dies})
    config, grid = files(tmp_path, RATIOS)
    result = in_process(["sweep", config, "--grid", grid, "--out", "exp"], cwd=tmp_path)
    assert result.returncode == 1
    failed = pd.read_parquet(tmp_path / "exp" / "index.parquet")["cell"][1]
    assert f"1 of 4 cells did not complete: {failed};" in result.stderr
    assert "failed    ran" in result.stdout and "the model server went away" in result.stdout


def test_sweep_with_a_bad_grid_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    config, grid = files(tmp_path, "grid:\n  seed: [1]\n  game.ratio: [0.5, 2]\n")
    result = in_process(["sweep", config, "--grid", grid], cwd=tmp_path)
    assert_user_error(result, "grid cell 2 of 2 (seed=1, game.ratio=2)", "game.ratio: must be")
    assert not (tmp_path / "results").exists()


def test_bundles_compare_shows_only_the_keys_that_differ(level_k_config, tmp_path: Path) -> None:
    experiment = sweep(level_k_config, {"grid": {"seed": [1, 2]}}, tmp_path / "exp")
    paths = [b.path for b in experiment.bundles().values()]
    result = in_process(["bundles", "compare", *paths], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    differ = out.split("config keys that differ:\n", 1)[1].split("bundle ", 1)[0]
    assert [line.split()[0] for line in differ.strip().splitlines()] == ["b1", "key", "seed"]
    assert "statistic  mean target n_valid  mean target n_valid" in out
    assert out.splitlines()[0] == f"b1: {paths[0]} (complete)"
    single = in_process(["bundles", "compare", paths[0]], cwd=tmp_path)
    assert_user_error(
        single, "compare: give two or more bundles (a list, or a mapping label: bundle), got 1"
    )
