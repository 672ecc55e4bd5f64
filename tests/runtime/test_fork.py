"""What-if forks (issue 27, item 3): a new bundle whose rounds before K are its parent's.

The shared rounds are the parent's files byte for byte and the fork verifies; the rounds from K
are played under the changed config with every agent's memory of the shared rounds (a fake model
whose answer hashes its prompt shows it); a fork without changes plays exactly the parent's
later rounds (every draw a pure function of seed, agent, round and step), on the embedded model
too; a cancelled fork resumes; what a fork must keep, a parent that does not verify and a round
out of range are refused before anything is written.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from resume_helpers import LEVEL_K, PromptHashModel, cancel_after, timeless

from workbench.errors import BundleError, ConfigError
from workbench.results import Bundle, verify_bundle
from workbench.results.layout import PERSONAS_FILE
from workbench.runtime import Simulation


def llm_parent(make_config, out: Path, rounds: int = 3) -> Bundle:
    config = make_config(policy={"kind": "llm"}, n_agents=12, rounds=rounds, agents_per_shard=5)
    return Simulation(config, model=PromptHashModel()).run(out_dir=out, progress=False)


def shared_files(bundle: Bundle, before: int) -> dict[str, bytes]:
    """The personas and the response part files of rounds before `before`, by relative path."""
    files = {PERSONAS_FILE: (bundle.path / PERSONAS_FILE).read_bytes()}
    for number in range(1, before):
        for part in bundle.response_files(number):
            files[str(part.relative_to(bundle.path))] = part.read_bytes()
    return files


def test_a_fork_shares_the_parents_rounds_and_plays_on_under_its_change(make_config, tmp_path):
    parent = llm_parent(make_config, tmp_path / "parent")
    model = PromptHashModel()
    said = "Game theory says the equilibrium is 0."
    changes = {"game.ratio": "1/2", "game.prompt.announcement": said}
    fork = Simulation.fork(parent.path, 3, changes, model=model).run(
        out_dir=tmp_path / "forks", progress=False
    )
    assert fork.path != parent.path and fork.status == "complete"
    report = verify_bundle(fork.path)
    assert report.ok, str(report)
    assert shared_files(fork, 3) == shared_files(parent, 3)  # byte for byte
    assert (
        fork.rounds()
        .drop(columns="seconds")
        .iloc[:2]
        .equals(parent.rounds().drop(columns="seconds").iloc[:2])
    )
    entry = fork.manifest["forked_from"]
    assert entry["run_id"] == parent.run_id and entry["at_round"] == 3
    assert entry["overrides"] == changes
    assert [g["ratio"] for g in entry["round_games"]] == [parent.config.game.ratio] * 2
    assert len(entry["parent_manifest_sha256"]) == 64
    assert fork.config.game.ratio == 0.5 and parent.config.game.ratio != 0.5
    assert fork.config.game.prompt.announcement == said
    # only round 3 was played, every agent shown its own two earlier numbers
    assert model.own_numbers_seen == 12
    third = fork.rounds().iloc[2]
    assert third["target"] == pytest.approx(0.5 * third["mean"])
    changed = fork.responses(3)["guess"].to_numpy() != parent.responses(3)["guess"].to_numpy()
    assert changed.any()  # the prompt names the new ratio, so the answers moved


@pytest.mark.parametrize("at_round", [2, 3])
def test_a_fork_without_changes_plays_the_parents_later_rounds(at_round, make_config, tmp_path):
    parent = llm_parent(make_config, tmp_path / "parent")
    fork = Simulation.fork(parent, at_round, model=PromptHashModel()).run(
        out_dir=tmp_path / "forks", progress=False
    )
    for left, right in zip(timeless(fork), timeless(parent), strict=True):
        pd.testing.assert_frame_equal(left, right)


def test_a_cancelled_fork_resumes_like_any_run(make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=10, rounds=3, seed=13, agents_per_shard=3)
    parent = Simulation(config).run(out_dir=tmp_path / "parent", progress=False)
    changes = {"game.rounds": 5, "game.ratio": "1/2"}
    whole = Simulation.fork(parent, 2, changes).run(out_dir=tmp_path / "whole", progress=False)
    sim = Simulation.fork(parent, 2, changes)
    cut = sim.run(out_dir=tmp_path / "cut", progress=False, on_round=cancel_after(sim, 3))
    assert cut.status == "cancelled" and cut.rounds_count == 3
    resumed = Simulation.resume(cut.path).run(progress=False)
    assert resumed.status == "complete" and verify_bundle(resumed.path).ok
    for left, right in zip(timeless(resumed), timeless(whole), strict=True):
        pd.testing.assert_frame_equal(left, right)
    assert resumed.manifest["forked_from"]["at_round"] == 2
    assert [r["after_round"] for r in resumed.manifest["resumed"]] == [3]


def test_a_cancelled_parents_finished_rounds_can_be_forked(make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=10, rounds=4, seed=3)
    sim = Simulation(config)
    parent = sim.run(out_dir=tmp_path / "parent", progress=False, on_round=cancel_after(sim, 2))
    assert parent.status == "cancelled"
    fork = Simulation.fork(parent, 3).run(out_dir=tmp_path / "forks", progress=False)
    assert fork.status == "complete" and fork.rounds_count == 4 and verify_bundle(fork.path).ok
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)
    for left, right in zip(timeless(fork), timeless(whole), strict=True):
        pd.testing.assert_frame_equal(left, right)


@pytest.mark.parametrize(
    ("at_round", "overrides", "says"),
    [
        (2, {"n_agents": 11}, "n_agents: a fork keeps its parent's agents"),
        (2, {"seed": 8}, "seed: a fork keeps"),
        (2, {"game.group_by": "education"}, "game.group_by: a fork keeps"),
        (1, {}, "at_round 1: a fork shares the parent's rounds before it"),
        (5, {}, "at_round 5:"),
        (3, {"game.rounds": 2}, "game.rounds 2: the fork starts at round 3"),
        (2, {"game.ratio": "two"}, "game.ratio"),
    ],
)
def test_a_fork_refuses_what_it_cannot_share(at_round, overrides, says, make_config, tmp_path):
    config = make_config(policy=LEVEL_K, n_agents=10, rounds=3)
    parent = Simulation(config).run(out_dir=tmp_path / "parent", progress=False)
    with pytest.raises(ConfigError, match=says):
        Simulation.fork(parent, at_round, overrides).run(out_dir=tmp_path / "forks")
    assert not (tmp_path / "forks").exists()


def test_a_parent_that_does_not_verify_is_not_forked(make_config, tmp_path):
    parent = Simulation(make_config(policy=LEVEL_K, n_agents=10, rounds=3)).run(
        out_dir=tmp_path / "parent", progress=False
    )
    part = parent.response_files(1)[0]
    part.write_bytes(part.read_bytes()[:-1] + b"\0")
    with pytest.raises(BundleError, match="does not verify"):
        Simulation.fork(parent.path, 2)
    assert not (tmp_path / "forks").exists()


def test_cli_forks_with_set_and_refuses_a_lone_fork(make_config, tmp_path):
    parent = Simulation(make_config(policy=LEVEL_K, n_agents=10, rounds=3)).run(
        out_dir=tmp_path / "parent", progress=False
    )

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "workbench.cli", "run", "--no-progress", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)

    done = cli("--fork", str(parent.path), "--at-round", "2", "--set", "game.ratio=1/2",
               "--out", str(tmp_path / "forks"), "--run-id", "half")  # fmt: skip
    assert done.returncode == 0, done.stderr
    fork = Bundle.open(tmp_path / "forks" / "half")
    assert f"bundle: {fork.path}" in done.stdout
    assert fork.manifest["forked_from"]["run_id"] == parent.run_id
    assert fork.config.game.ratio == 0.5 and verify_bundle(fork.path).ok
    compare = [sys.executable, "-m", "workbench.cli", "bundles", "compare", str(parent.path),
               str(fork.path)]  # fmt: skip
    compared = subprocess.run(compare, capture_output=True, text=True, timeout=120, check=True)
    assert "b2: " in compared.stdout and "a fork of b1 from round 2" in compared.stdout
    from typer.testing import CliRunner

    from workbench.cli import app

    shown_cli = CliRunner().invoke(app, ["bundles", "show", str(fork.path)])
    said = f"fork:    a fork of {parent.run_id} from round 2 ({parent.path})"
    assert said in shown_cli.output, shown_cli.output
    listed = CliRunner().invoke(app, ["bundles", "list", str(tmp_path / "forks")])
    row = next(line for line in listed.output.splitlines() if line.strip().startswith("half"))
    assert f"{parent.run_id} from round 2" in row, listed.output  # its fork_of column
    from workbench.ui.results_data import provenance

    shown = dict(provenance(fork).itertuples(index=False))
    assert shown["forked_from.run_id"] == parent.run_id and shown["forked_from.at_round"] == "2"

    estimated = cli("--fork", str(parent.path), "--at-round", "2", "--estimate")
    assert estimated.returncode != 0 and "--estimate: a resumed or forked run" in estimated.stderr

    lone = cli("--fork", str(parent.path))
    assert lone.returncode != 0
    assert "--fork and --at-round go together" in lone.stderr
    kept = cli("--fork", str(parent.path), "--at-round", "2", "-n", "20")
    assert kept.returncode != 0 and "n_agents: a fork keeps" in kept.stderr
    assert kept.stderr.count("\n") <= 2  # one clear line, no traceback


def test_an_embedded_fork_without_changes_draws_the_parents_answers(
    embedded_model, make_config, tmp_path
):
    """The real model in distribution mode: the fork's later rounds are the parent's answers."""
    config = make_config(policy={"kind": "llm"}, n_agents=40, rounds=3, agents_per_shard=20)
    parent = Simulation(config, model=embedded_model).run(out_dir=tmp_path / "p", progress=False)
    assert parent.responses()["status"].eq("ok").all()
    fork = Simulation.fork(parent, 3, model=embedded_model).run(
        out_dir=tmp_path / "forks", progress=False
    )
    assert verify_bundle(fork.path).ok
    for left, right in zip(timeless(fork), timeless(parent), strict=True):
        pd.testing.assert_frame_equal(left, right)


def test_a_sweep_forks_one_parent_many_ways(make_config, tmp_path):
    """`sweep(ForkFrom(parent, K), grid)` and `workbench sweep --fork`: every cell shares the
    parent's first rounds and plays the rest with its own overrides; a cell that changes what a
    fork keeps is refused before anything runs; a rerun keeps every complete cell."""
    from workbench.experiment import sweep
    from workbench.experiment.sweep import ForkFrom

    parent = Simulation(make_config(policy=LEVEL_K, n_agents=10, rounds=3)).run(
        out_dir=tmp_path / "parent", progress=False
    )
    grid = {"grid": {"game.ratio": ["1/2", "3/4"], "game.rounds": [3, 4]}}
    experiment = sweep(ForkFrom(parent.path, 3), grid, tmp_path / "exp")
    index = experiment.index()
    assert list(index["status"]) == ["complete"] * 4
    for cell, bundle in experiment.bundles().items():
        assert bundle.manifest["forked_from"]["run_id"] == parent.run_id, cell
        assert shared_files(bundle, 3) == shared_files(parent, 3)
        assert verify_bundle(bundle.path).ok
    again = sweep(ForkFrom(parent.path, 3), grid, tmp_path / "exp")
    assert again.index()["status"].eq("complete").all()

    with pytest.raises(ConfigError, match="grid cell 2 of 2 .*seed: a fork keeps"):
        sweep(ForkFrom(parent.path, 2), {"grid": {"seed": [7, 8]}}, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()

    (tmp_path / "grid.yaml").write_text("grid:\n  game.ratio: ['1/3']\n")
    command = [sys.executable, "-m", "workbench.cli", "sweep", "--fork", str(parent.path),
               "--at-round", "2", "--grid", str(tmp_path / "grid.yaml"),
               "--out", str(tmp_path / "cli")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[1/1] complete" in done.stdout
