"""A `workbench sweep` process killed (SIGKILL) mid-way: rerun, the sweep completes with the
bundles an uninterrupted sweep gives (2 prompts x 2 ratios x 2 seeds, a slow random policy)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from workbench.experiment import Experiment, sweep

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

CONFIG = """\
name: slow-sweep
seed: 5
n_agents: 12
population:
  name: tiny
  dimensions:
    - name: gender
      shares: {male: 1/2, female: 1/2}
game: {rounds: 2}
policy: {kind: random, latency_s: 0.4}
"""
GRID = """\
grid:
  game.prompt.style: [direct, step_by_step]
  game.ratio: ["2/3", "1/2"]
  seed: [1, 2]
"""
WAIT_S = 90.0


def complete_cells(index: Path) -> int:
    """How many cells the index marks complete (0 while it is absent or being replaced)."""
    try:
        return int((pd.read_parquet(index)["status"] == "complete").sum())
    except (FileNotFoundError, OSError, ValueError):
        return 0


def answers(experiment: Experiment) -> dict[str, pd.DataFrame]:
    """Each cell's responses without the column that measures time."""
    return {
        cell: bundle.responses().drop(columns="latency_s")
        for cell, bundle in experiment.bundles().items()
    }


def test_a_killed_sweep_completes_on_rerun_as_an_uninterrupted_one(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "grid.yaml").write_text(GRID, encoding="utf-8")
    command = [sys.executable, "-m", "workbench.cli", "sweep", "base.yaml", "--grid", "grid.yaml",
               "--out", "killed"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + WAIT_S
        while complete_cells(tmp_path / "killed" / "index.parquet") < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no two cells completed in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    before = Experiment.open(tmp_path / "killed").index()
    assert 2 <= (before["status"] == "complete").sum() < 8, "killed before the sweep ended"
    seen = []
    resumed = sweep(tmp_path / "base.yaml", tmp_path / "grid.yaml", tmp_path / "killed",
                    on_cell=seen.append)  # fmt: skip
    actions = [result.action for result in seen]
    assert actions[:2] == ["kept", "kept"] and set(actions[2:]) <= {"ran", "resumed", "restarted"}
    assert list(resumed.index()["status"]) == ["complete"] * 8
    whole = sweep(tmp_path / "base.yaml", tmp_path / "grid.yaml", tmp_path / "whole")
    got, want = answers(resumed), answers(whole)
    assert list(got) == list(want)
    for cell in want:
        pd.testing.assert_frame_equal(got[cell], want[cell])
