"""The dashboard page keeps its edits for its results folder: a reload shows them again."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.ui.app import WorkbenchApp
from workbench.ui.page_state import STATE_FILE, PageState, read_state, write_state


def test_a_new_page_shows_the_edits_of_the_last(tmp_path: Path) -> None:
    first = WorkbenchApp(results_dir=str(tmp_path))
    first.editor.add_dimension("occupation", {"nurse": 0.5, "engineer": 0.5})
    first.editor.n, first.editor.seed = 120, 7
    first.launcher.set(**{"game.rounds": 3, "output.exact_distributions": True})
    first.launcher.config_path = "mine.yaml"
    assert (tmp_path / STATE_FILE).is_file()

    again = WorkbenchApp(results_dir=str(tmp_path))  # a reload: a new session, a new app
    assert again.state_note == ""
    assert [d["name"] for d in again.editor.dimensions][-1] == "occupation"
    assert again.editor.spec is not None and again.editor.spec == first.editor.spec
    assert (again.editor.n, again.editor.seed) == (120, 7)
    assert (again.launcher.n_agents, again.launcher.seed) == (120, 7)  # the run plays them
    config = again.launcher.config()
    assert config.game.rounds == 3 and config.output.exact_distributions
    assert again.launcher.config_path == "mine.yaml"


def test_an_invalid_population_comes_back_to_be_fixed(tmp_path: Path) -> None:
    first = WorkbenchApp(results_dir=str(tmp_path))
    first.editor.add_dimension("occupation", {"nurse": 0.2, "engineer": 0.2})  # sums to 0.4
    assert first.editor.spec is None
    again = WorkbenchApp(results_dir=str(tmp_path))
    assert again.editor.spec is None and "occupation" in again.editor.message
    assert again.launcher.population_problem  # nothing starts until it is fixed


def test_a_state_the_page_cannot_use_is_set_aside_in_words(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_text("{not json", encoding="utf-8")
    app = WorkbenchApp(results_dir=str(tmp_path))
    assert "could not be read" in app.state_note and app.editor.spec is not None

    state = PageState(
        population={"dimensions": "not a list"},
        n_agents=-4,
        seed=3,
        values={"game.rounds": "three", "no.such.key": 1, "name": "kept"},
    )
    write_state(tmp_path, state)
    app = WorkbenchApp(results_dir=str(tmp_path))
    note = app.state_note
    assert "kept population not used" in note and "kept n -4 not used" in note
    assert "game.rounds" in note and "no.such.key" in note
    assert app.editor.seed == 3 and app.launcher.values["name"] == "kept"
    assert app.editor.spec is not None  # the default population stands


def test_the_state_file_is_plain_json_and_a_page_can_opt_out(tmp_path: Path) -> None:
    app = WorkbenchApp(results_dir=str(tmp_path), keep_state=False)
    app.editor.n = 99
    assert not (tmp_path / STATE_FILE).exists()
    written = write_state(tmp_path, PageState(n_agents=5))
    assert written is not None and json.loads(written.read_text())["n_agents"] == 5
    assert read_state(tmp_path)[0] == PageState(n_agents=5)
    (tmp_path / STATE_FILE).write_text('{"version": 99}', encoding="utf-8")
    assert read_state(tmp_path)[0] is None and "version" in read_state(tmp_path)[1]
