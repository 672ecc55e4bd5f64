"""`workbench run --run-id` and `workbench runs list|follow|cancel` on real runs (in this
process through `workbench.cli.main`, as a user types them)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import assert_user_error, in_process

from workbench.config import RunConfig, save_yaml
from workbench.results import Bundle
from workbench.runs.launch_states import RUN_COLUMNS
from workbench.runs.records import LAUNCHES_DIR


@pytest.fixture
def config_file(make_config: Callable[..., RunConfig], tmp_path: Path) -> Path:
    config = make_config(policy={"kind": "level_k"}, n_agents=6, rounds=2, name="quick")
    return save_yaml(config, tmp_path / "quick.yaml")


def test_run_id_names_the_bundle(config_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = in_process(["run", config_file, "--out", out, "--run-id", "my-run.1"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"bundle: {out / 'my-run.1'}"
    assert Bundle.open(out / "my-run.1").run_id == "my-run.1"

    again = in_process(["run", config_file, "--out", out, "--run-id", "my-run.1"], tmp_path)
    assert_user_error(again, "--run-id:", "already exists", "choose another run id")


@pytest.mark.parametrize("bad", ["../escape", "a/b", ".hidden", "-dash", "x" * 300, "sp ace"])
def test_an_unsafe_run_id_is_refused_before_anything_is_written(
    config_file: Path, tmp_path: Path, bad: str
) -> None:
    out = tmp_path / "results"
    done = in_process(["run", config_file, "--out", out, "--run-id", bad], tmp_path)
    assert_user_error(done, "--run-id")
    assert not out.exists()
    assert not (tmp_path / "escape").exists()


def test_resume_takes_no_run_id(tmp_path: Path) -> None:
    done = in_process(["run", "--resume", tmp_path / "some", "--run-id", "x"], tmp_path)
    assert_user_error(done, "--run-id", "a resumed run keeps its bundle")


def test_runs_list_follow_and_cancel_a_finished_run(config_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    assert (
        in_process(["run", config_file, "--out", out, "--run-id", "r1"], tmp_path).returncode == 0
    )
    # a launch whose process exited before writing its bundle
    gone = out / LAUNCHES_DIR / "r2"
    gone.mkdir(parents=True)
    (gone / "launch.json").write_text(
        '{"pid": 1, "host": "elsewhere", "started_at": "2026-01-01T00:00:00+00:00", '
        f'"config": "{gone / "config.yaml"}", "log": "", "command": [], "name": "quick", '
        '"rounds": 2}',
        encoding="utf-8",
    )
    (gone / "run.log").write_text("error: model.base_urls: cannot reach x\n", encoding="utf-8")

    listed = in_process(["runs", "list", out], tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    assert rows["r1"][1] == "complete" and rows["r2"][1] == "failed"
    assert tuple(listed.stdout.splitlines()[0].split()) == RUN_COLUMNS

    followed = in_process(["runs", "follow", "r1", "--results", out], tmp_path)
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    assert lines[0] == "started r1: 6 agents, 2 rounds"
    assert "round 2 done: mean" in followed.stdout and lines[-1] == "complete after 2 rounds"
    assert " engines: " not in followed.stdout  # a local run records no engine work

    refused = in_process(["runs", "cancel", "r1", "--results", out], tmp_path)
    assert_user_error(refused, "no launch record", "Ctrl-C")
    elsewhere = in_process(["runs", "cancel", gone], tmp_path)
    assert_user_error(elsewhere, "launch r2 runs on host elsewhere; cancel it there")
    unknown = in_process(["runs", "follow", "nope", "--results", out], tmp_path)
    assert_user_error(unknown, "RUN: nope is neither", "workbench runs list")
    assert in_process(["runs", "list", tmp_path / "none"], tmp_path).stdout.startswith("no runs")
