"""Paths typed in the page stay inside the dashboard's workspace: `..`, absolute paths and
symbolic links that lead out are refused with one message; Save writes only .yaml/.yml files;
the components and the app take the workspace (by default the results folder)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from workbench.config import PopulationSpec
from workbench.errors import ConfigError
from workbench.ui import PopulationEditor
from workbench.ui.app import WorkbenchApp
from workbench.ui.cluster_monitor import ClusterMonitor
from workbench.ui.launch_settings import LaunchSettings
from workbench.ui.results_explorer import ResultsExplorer
from workbench.ui.workspace import dashboard_folders, inside, shown_path, yaml_target

OUTSIDE = "is outside the workspace"


@pytest.fixture
def rooms(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace, a folder beside it) with a secret-looking JSON file and a YAML file beside."""
    workspace, beside = tmp_path / "workspace", tmp_path / "beside"
    workspace.mkdir()
    beside.mkdir()
    (beside / "secret.json").write_text(json.dumps({"name": "SECRET-VALUE", "dimensions": []}))
    (beside / "other.yaml").write_text("name: theirs\n")
    return workspace, beside


def test_inside_takes_relative_paths_from_the_workspace_and_refuses_the_way_out(rooms) -> None:
    workspace, beside = rooms
    assert inside(workspace, "a/b.yaml") == workspace.resolve() / "a" / "b.yaml"
    assert inside(workspace, "a/../b.yaml") == workspace.resolve() / "b.yaml"
    for path in ("../beside/other.yaml", str(beside / "other.yaml"), "/etc/passwd", ".."):
        with pytest.raises(ConfigError, match=OUTSIDE):
            inside(workspace, path, "load")
    (workspace / "link").symlink_to(beside)  # a link inside that leads out
    with pytest.raises(ConfigError, match=r"^load: 'link/other.yaml' is outside the workspace"):
        inside(workspace, "link/other.yaml", "load")
    assert inside(None, "../anything") == Path("../anything")  # a notebook: no limit


def test_save_writes_only_yaml_files_inside(rooms) -> None:
    workspace, beside = rooms
    (workspace / "notes.txt").write_text("keep me")
    (workspace / "notes.yaml").symlink_to(workspace / "notes.txt")  # a .yaml name over a .txt
    (workspace / "folder.yaml").mkdir()
    for path, why in (
        ("notes.txt", "use a .yaml or .yml file name"),
        ("notes.yaml", "use a .yaml or .yml file name"),
        ("folder.yaml", "is not a regular file"),
        ("", "type a .yaml or .yml file name first"),
    ):
        with pytest.raises(ConfigError, match=why):
            yaml_target(workspace, path)
    assert yaml_target(workspace, "new.yml") == workspace.resolve() / "new.yml"


def test_the_editor_refuses_save_and_load_outside_its_workspace(rooms, education_spec) -> None:
    workspace, beside = rooms
    editor = PopulationEditor(spec=education_spec, workspace=str(workspace))
    for path in ("../beside/other.yaml", str(beside / "mine.yaml")):
        editor._act(editor.save, path)  # what the Save button does
        assert OUTSIDE in editor.action_message
    assert (beside / "other.yaml").read_text() == "name: theirs\n"
    assert not (beside / "mine.yaml").exists()
    editor._act(editor.load, str(beside / "secret.json"))  # Load read fields of any JSON file
    assert OUTSIDE in editor.action_message and "SECRET-VALUE" not in editor.action_message
    assert editor.population_name != "SECRET-VALUE"
    written = editor.save("specs.yaml")  # relative: inside the workspace
    assert written == workspace.resolve() / "specs.yaml"
    editor.load("specs.yaml")
    assert editor.spec == PopulationSpec.model_validate(education_spec.model_dump())


def test_folders_and_bundles_typed_in_the_page_stay_inside(rooms) -> None:
    workspace, beside = rooms
    explorer = ResultsExplorer(results_dir=str(workspace), workspace=str(workspace))
    explorer.results_dir = str(beside)
    assert explorer.bundles.empty and OUTSIDE in explorer.problem
    explorer.results_dir = "."
    assert explorer.problem == ""
    monitor = ClusterMonitor(results_dir=str(beside), workspace=str(workspace))
    asyncio.run(monitor.refresh())
    assert monitor.message_kind == "danger" and OUTSIDE in monitor.message
    settings = LaunchSettings(
        workspace=str(workspace), values={"model.kind": "replay", "model.bundle": str(beside)}
    )
    with pytest.raises(ConfigError, match=rf"^model.bundle: .* {OUTSIDE}"):
        settings.config()


def test_the_app_works_inside_its_results_folder_unless_given_a_workspace(rooms) -> None:
    workspace, beside = rooms
    results = workspace / "results"
    app = WorkbenchApp(results_dir=str(results))
    parts = (app.editor, app.launcher, app.explorer, app.monitor)
    assert {p.workspace for p in parts} == {str(results.resolve())}
    app = WorkbenchApp(results_dir=str(results), workspace=str(workspace))
    parts = (app.editor, app.launcher, app.explorer, app.monitor)
    assert {p.workspace for p in parts} == {str(workspace.resolve())}
    assert dashboard_folders(results, workspace) == (results.resolve(), workspace.resolve())
    with pytest.raises(ConfigError, match=r"^--results: .* is outside the workspace"):
        dashboard_folders(beside, workspace)


def test_a_bundle_path_is_shown_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page names a bundle as `workbench run` prints it, `results/<run_id>`, when it lies
    under the folder the dashboard was started in; elsewhere, whole."""
    monkeypatch.chdir(tmp_path)
    bundle = tmp_path / "results" / "quickstart-20261207-015630-120d"
    assert shown_path(bundle) == "results/quickstart-20261207-015630-120d"
    assert shown_path("results/x") == "results/x"
    elsewhere = tmp_path.parent / "elsewhere" / "results" / "x"
    assert shown_path(elsewhere) == str(elsewhere)
