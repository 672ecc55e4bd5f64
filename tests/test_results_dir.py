"""One results folder whatever the working directory (`workbench._files.results_dir`): a
notebook run from notebooks/, the dashboard started at the project root, the CLI, the magics
and `panel serve` all see the same bundles; and `latest_bundle`, what a served notebook shows
instead of playing its game again."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from workbench._files import PROJECT_MARKERS, RESULTS_DIR_ENV, results_dir
from workbench.ui import ClusterMonitor, ResultsExplorer


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (a pyproject.toml at its root) with notebooks/ in it; no
    $WORKBENCH_RESULTS_DIR."""
    monkeypatch.delenv(RESULTS_DIR_ENV, raising=False)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notebooks" / "deeper").mkdir(parents=True)
    return tmp_path


def test_every_folder_of_a_project_shares_the_root_results(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for here in (project, project / "notebooks", project / "notebooks" / "deeper"):
        monkeypatch.chdir(here)
        assert results_dir().absolute() == project / "results"
    monkeypatch.chdir(project)
    assert results_dir() == Path("results")  # at the root: as short as the CLI prints it


def test_a_git_checkout_marks_its_root_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RESULTS_DIR_ENV, raising=False)
    (tmp_path / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    assert results_dir().absolute() == tmp_path / "results"


def test_outside_any_project_it_is_the_current_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(RESULTS_DIR_ENV, raising=False)
    folders = (tmp_path, *tmp_path.parents)
    if any((folder / marker).exists() for folder in folders for marker in PROJECT_MARKERS):
        pytest.fail(f"{tmp_path} lies inside a project: choose a temporary folder outside one")
    monkeypatch.chdir(tmp_path)
    assert results_dir().absolute() == tmp_path / "results"


def test_the_environment_names_it_outright_and_a_given_folder_wins(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path_factory.mktemp("shared") / "bundles"
    monkeypatch.setenv(RESULTS_DIR_ENV, str(elsewhere))
    monkeypatch.chdir(project / "notebooks")
    assert results_dir() == elsewhere
    assert results_dir("mine") == Path("mine")  # --out, --results, output.dir
    assert wb.configure("quickstart", {}).output.folder() == elsewhere
    assert wb.configure("quickstart", {"output.dir": "mine"}).output.folder() == Path("mine")
    monkeypatch.setenv(RESULTS_DIR_ENV, "")  # set but empty: as if unset
    assert results_dir().absolute() == project / "results"


def test_components_and_runs_made_in_a_notebook_folder_use_the_project_results(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "notebooks")
    shared = str(project / "results")
    assert ResultsExplorer().results_dir == shared
    assert ClusterMonitor().results_dir == shared
    config = wb.configure("quickstart", {"n_agents": 12, "policy.kind": "level_k"})
    bundle = wb.Simulation(config).run(progress=False)
    assert bundle.path.parent == project / "results"
    found = wb.latest_bundle(config, results_dir())
    assert found is not None and found.path == bundle.path


def test_latest_bundle_is_the_newest_complete_one_of_that_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = wb.configure("quickstart", {"n_agents": 12, "policy.kind": "level_k"})
    assert wb.latest_bundle(config, tmp_path / "none") is None
    first = wb.Simulation(config).run(out_dir=tmp_path / "r", progress=False)
    second = wb.Simulation(config).run(out_dir=tmp_path / "r", progress=False)
    other = wb.configure("quickstart", {"n_agents": 12, "policy.kind": "level_k", "seed": 7})
    wb.Simulation(other).run(out_dir=tmp_path / "r", progress=False)
    found = wb.latest_bundle(config, tmp_path / "r")
    assert found is not None and found.path == second.path != first.path
    assert wb.latest_bundle(other.model_copy(update={"n_agents": 13}), tmp_path / "r") is None
