"""PopulationEditor: edits give the spec the CLI would read, messages are the CLI's ConfigError
text, shares are normalized or say why not, and YAML files round-trip. No browser: params are
set and state asserted, and `__panel__()` is built into a Bokeh model."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pane_text import shown_text
from panel.pane import Alert, Markdown, Str
from panel.widgets import FloatInput as _FloatInput
from panel.widgets import IntInput
from panel.widgets import Tabulator as _Tabulator

import workbench.ui
from workbench.bench.startup import heavy_modules_loaded
from workbench.config import PopulationSpec, load_population_spec
from workbench.errors import ConfigError
from workbench.ui import PersonaPreview, PopulationEditor
from workbench.ui.population_page import EditedPopulation

ROOT = Path(__file__).resolve().parents[2]
EDUCATION = ROOT / "personas" / "paper-education.yaml"
PROFESSION = ROOT / "personas" / "paper-profession.yaml"


@pytest.fixture
def editor() -> PopulationEditor:
    editor = PopulationEditor()
    editor.load(EDUCATION)
    return editor


def test_the_ui_face_names_its_components() -> None:
    for name in workbench.ui.__all__:
        assert getattr(workbench.ui, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        workbench.ui.nope  # noqa: B018


def test_importing_the_ui_face_loads_no_heavy_library() -> None:
    probe = "import workbench.ui, sys; print('panel' in sys.modules)"
    assert heavy_modules_loaded("import workbench.ui") == []
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_changing_an_education_share_updates_the_preview_counts(editor) -> None:
    preview = PersonaPreview.for_editor(editor)
    editor.n = 1000
    counts = preview.counts.set_index(["dimension", "category"])["count"]
    assert counts["education", "doctoral degree"] == 200

    editor.auto_normalize = True
    editor.set_share("education", "doctoral degree", 0.4)
    assert editor.message == "" and editor.spec is not None
    counts = preview.counts.set_index(["dimension", "category"])
    assert counts.loc[("education", "doctoral degree"), "count"] == 400
    assert counts.loc[("education", "high school"), "count"] == 150  # the others rescaled
    assert counts.loc[("education", "doctoral degree"), "target"] == pytest.approx(0.4)
    assert (preview.personas["education"] == "doctoral degree").sum() == 400


def test_rescaled_shares_read_as_typed_decimals(editor) -> None:
    """0.4 * 0.2 / 0.8 is 0.09999999999999999 in floats; the share boxes show 0.1."""
    editor.auto_normalize = True
    editor.set_share("education", "bachelor's degree", 0.6)
    shares = next(d for d in editor.dimensions if d["name"] == "education")["shares"]
    assert shares["doctoral degree"] == 0.1 and shares["bachelor's degree"] == 0.6
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-11)


def test_shares_off_one_say_their_sum_and_normalize_fixes_them(editor) -> None:
    preview = PersonaPreview.for_editor(editor)
    editor.set_share("education", "doctoral degree", 0.13)
    assert editor.spec is None
    assert editor.share_notes == [
        "dimension 'education': shares sum to 0.93, not 1; press Normalize to rescale them"
    ]
    # the message is the CLI's: the same file edited the same way fails with the same text
    bad = yaml.safe_load(EDUCATION.read_text())
    bad["dimensions"][1]["shares"]["doctoral degree"] = 0.13
    with pytest.raises(ConfigError) as cli:
        _load_text(yaml.safe_dump(bad), EDUCATION)
    assert editor.message == str(cli.value)
    assert "shares must sum to 1, got 0.93" in editor.message
    assert preview.personas is None and preview.counts is None
    assert preview.message == editor.message

    editor.normalize("education")
    assert editor.spec is not None and editor.share_notes == [] and preview.personas is not None
    shares = editor.spec.dimension("education").shares
    assert shares["doctoral degree"] == pytest.approx(0.13 / 0.93)
    assert sum(shares.values()) == pytest.approx(1)


def test_shares_all_zero_normalize_to_equal_shares(editor) -> None:
    preview = PersonaPreview.for_editor(editor)
    for category in list(editor.spec.dimension("gender").shares):
        editor.set_share("gender", category, 0.0)
    assert editor.spec is None and preview.personas is None
    assert editor.share_notes == [
        "dimension 'gender': shares sum to 0, not 1; press Normalize to split them equally"
    ]
    editor._act(editor.normalize, "gender", place="gender")  # what the card's Normalize does
    assert editor.action_message == "" and editor.spec is not None, editor.message
    assert editor.spec.dimension("gender").shares == {"male": 0.5, "female": 0.5}
    assert preview.personas is not None


def test_a_negative_share_says_why_normalize_cannot_rescale_it_in_one_text(editor) -> None:
    editor.set_share("gender", "male", -0.5)
    why = "the share of 'male' is negative; set it to 0 or more"
    assert editor.share_notes == [
        f"dimension 'gender': shares sum to 0, not 1; Normalize cannot rescale them: {why}"
    ]
    with pytest.raises(ConfigError) as refused:
        editor.normalize()
    assert str(refused.value) == f"dimension 'gender': cannot normalize: {why}"
    assert editor.dimensions[0]["shares"]["male"] == -0.5  # nothing changed
    editor._act(editor.normalize, "gender", place="gender")
    assert (editor.action_place, editor.action_failed) == ("gender", True)


def test_a_new_dimension_gets_equal_shares_and_a_shaped_table_keeps_its_own(editor) -> None:
    editor.add_dimension("occupation")
    assert editor.spec is None
    assert editor.problems == [
        ("occupation", "dimension 'occupation': shares must list at least one category")
    ]
    for count, job in enumerate(("engineer", "nurse", "teacher"), start=1):
        editor.add_category("occupation", job)
        shares = editor.dimensions[-1]["shares"]
        assert shares == pytest.approx(dict.fromkeys(shares, 1 / count)), shares
        assert editor.spec is not None, editor.message  # valid after every category
    editor.set_share("occupation", "engineer", 0.5)
    editor.set_share("occupation", "nurse", 0.2)
    editor.set_share("occupation", "teacher", 0.3)
    editor.add_category("occupation", "farmer")  # shaped: kept, the new one at 0
    assert editor.dimensions[-1]["shares"] == {
        "engineer": 0.5, "nurse": 0.2, "teacher": 0.3, "farmer": 0.0,
    }  # fmt: skip
    assert editor.spec is not None
    editor.set_given("occupation", "gender")  # one table per gender, each shaped as before
    editor.add_category("occupation", "pilot", 0.1)  # a share given is set as given
    assert editor.share_notes == [
        "dimension 'occupation' given gender='male': shares sum to 1.1, not 1; "
        "press Normalize to rescale them",
        "dimension 'occupation' given gender='female': shares sum to 1.1, not 1; "
        "press Normalize to rescale them",
    ]


def test_each_problem_is_placed_once_beside_what_it_is_about(editor) -> None:
    editor.set_share("education", "doctoral degree", 0.13)
    # the card's note says it; the CLI's text for the same table is only in `message`
    assert editor.problems == [("education", editor.share_notes[0])]
    assert "dimensions.1: dimension 'education': shares must sum to 1" in editor.message
    editor.normalize()
    editor.add_dimension("bad name", {"x": 1})
    assert editor.problems == [
        ("bad name", "name: must be letters, digits and _, not starting with a digit, got "
         "'bad name'")
    ]  # fmt: skip
    editor.remove_dimension("bad name")
    editor.persona_template = "You are {schooling}."
    assert editor.problems == [
        ("", "persona_template uses unknown dimensions ['schooling']; known: "
         "['education', 'gender']")
    ]  # fmt: skip
    empty = PopulationEditor()
    assert empty.problems == [("", "dimensions: needs at least 1 dimension; add one")]
    assert empty.message == "population spec: dimensions: needs at least 1 dimension; add one"


def test_a_refused_agents_or_seed_says_why_beside_its_box_and_starts_nothing(editor) -> None:
    from workbench.ui.launch_settings import LaunchSettings

    settings = LaunchSettings.for_editor(editor)
    editor.type_value("n", 120)
    assert editor.n == 120 and settings.n_agents == 120 and editor.message == ""
    editor.type_value("n", -5)  # the box keeps -5; the run keeps 120 but will not start
    fix = "Agents: must be at least 1, got -5; type how many agents to play, 1 to 100,000,000"
    assert editor.n == 120 and editor.refused == {"n": -5}
    assert editor.problems == [(":n", fix)] and editor.message == fix
    with pytest.raises(ConfigError, match="Agents: must be at least 1, got -5"):
        settings.config()
    editor.type_value("seed", -1)
    assert (":seed", "Seed: must be at least 0, got -1; type a whole number, 0 or more") in (
        editor.problems
    )
    editor.type_value("n", 30)
    editor.seed = 7  # set by code (an opened config, the preview's Regenerate): valid again
    assert editor.refused == {} and editor.problems == [] and settings.config().n_agents == 30
    view = editor.__panel__()
    view.get_root()
    boxes = {w.label: w for w in view.select(IntInput)}
    assert boxes["Agents"].start is None  # no bounds in the box to snap -5 back
    boxes["Agents"].value = 0
    assert editor.n == 30 and "Agents: must be at least 1, got 0" in _texts(view)
    assert "the run on the Run tab plays them" in boxes["Agents"].description


def test_n_zero_gives_a_message_and_no_table(editor) -> None:
    preview = PersonaPreview.for_editor(editor)
    editor.n = 0
    assert preview.personas is None and preview.counts is None
    assert preview.message == "n must be >= 1, got 0"  # sample_population's ConfigError
    view = preview.__panel__()
    view.get_root()
    assert not _find(view, _Tabulator) and "n must be >= 1, got 0" in _texts(view)


def test_the_page_has_one_pair_of_agents_and_seed_inputs(editor) -> None:
    """The editor's Agents and Seed set the preview's sample and the run; the preview and
    the Run tab's form have no inputs of their own for them."""
    from workbench.ui.launch_settings import LaunchSettings

    preview, settings = PersonaPreview.for_editor(editor), LaunchSettings.for_editor(editor)
    views = [editor.__panel__(), preview.__panel__(), settings.settings_view()]
    for view in views:
        view.get_root()
    boxes = [w.label for view in views for w in view.select(IntInput)]
    assert boxes.count("Agents") == 1 and boxes.count("Seed") == 1, boxes
    assert "N" not in boxes and "N (agents)" not in boxes
    editor.type_value("n", 1234)
    editor.type_value("seed", 8)
    assert "1,234 agents" in _texts(views[1])
    assert (settings.config().n_agents, settings.config().seed) == (1234, 8)
    editor.set_share("gender", "male", 0.9)  # the editor says why; the preview does not repeat
    assert editor.message not in _texts(views[1])
    alone = LaunchSettings()  # no editor on the page: the form has its own inputs
    assert {w.label for w in alone.settings_view().select(IntInput)} >= {"Agents", "Seed"}


def test_yaml_round_trip_equals_the_file(editor, tmp_path) -> None:
    assert editor.spec == load_population_spec(EDUCATION)
    assert editor.source == str(EDUCATION)
    written = editor.save(tmp_path / "edu.yaml")
    assert load_population_spec(written) == load_population_spec(EDUCATION)
    editor.path = str(tmp_path / "button.yaml")
    editor._act(editor._save_action)  # what the Save button does
    assert editor.action_message == f"saved to {tmp_path / 'button.yaml'}"
    assert load_population_spec(tmp_path / "button.yaml") == editor.spec

    other = PopulationEditor()
    other.load(PROFESSION)  # shares written as fractions like 1/6
    assert other.spec == load_population_spec(PROFESSION)
    other.save(tmp_path / "prof.yaml")
    assert load_population_spec(tmp_path / "prof.yaml") == load_population_spec(PROFESSION)
    assert PopulationSpec.model_validate(yaml.safe_load(other.yaml_text())) == other.spec


def test_an_invalid_file_loads_with_the_cli_message_and_is_not_saved(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(EDUCATION.read_text().replace("male: 0.5\n", "male: 0.4\n", 1))
    with pytest.raises(ConfigError) as cli:
        load_population_spec(bad)
    editor = PopulationEditor()
    editor.load(bad)
    assert editor.spec is None and editor.message == str(cli.value)
    with pytest.raises(ConfigError, match="cannot save: "):
        editor.save(tmp_path / "out.yaml")
    assert not (tmp_path / "out.yaml").exists()
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        editor.load(tmp_path / "broken.yaml")


def test_dimensions_categories_and_conditioning(editor) -> None:
    editor.add_dimension("occupation", {"engineer": 0.5, "teacher": 0.5}, given="education")
    spec = editor.spec
    assert spec is not None, editor.message
    occupation = spec.dimension("occupation")
    assert occupation.given == "education"
    assert set(occupation.shares) == set(spec.dimension("education").categories())

    editor.set_share("occupation", "engineer", 0.9, parent="doctoral degree")
    assert editor.spec is None  # 0.9 + 0.5 in that table
    editor.normalize("occupation")
    assert editor.spec.dimension("occupation").shares["doctoral degree"]["engineer"] == (
        pytest.approx(0.9 / 1.4)
    )
    with pytest.raises(ConfigError, match="name the parent category"):
        editor.set_share("occupation", "engineer", 0.5)

    editor.add_category("education", "none", 0.2)  # the child gets a table for it too
    assert editor.spec is None and "shares sum to 1.2" in editor.share_notes[0]
    editor.auto_normalize = True
    editor.set_share("education", "none", 0.2)  # the other five share the 0.8 left
    assert editor.spec.dimension("education").shares["high school"] == pytest.approx(0.16)
    editor.auto_normalize = False
    assert editor.spec is not None, editor.message
    assert editor.spec.dimension("occupation").shares["none"] == {
        "engineer": 0.5,
        "teacher": 0.5,
    }
    with pytest.raises(ConfigError, match="given to \\['occupation'\\]"):
        editor.remove_dimension("education")
    editor.remove_category("education", "none")
    editor.remove_category("occupation", "teacher")
    editor.normalize()  # every table: education's five again, occupation's one
    assert editor.spec.dimension("education").shares["high school"] == pytest.approx(0.2)
    assert editor.spec.dimension("occupation").categories() == ["engineer"]

    editor.set_given("occupation", None)
    assert editor.spec.dimension("occupation").shares == {"engineer": 1.0}
    editor.remove_dimension("occupation")
    assert [d.name for d in editor.spec.dimensions] == ["gender", "education"]


def test_settings_and_template_are_validated(editor) -> None:
    editor.sampling = "iid"
    editor.persona_template = "You are {gender} with {schooling}."
    assert editor.spec is None and "persona_template uses unknown dimensions" in editor.message
    editor.persona_template = "You are a {gender} holder of a {education}."
    assert editor.spec.sampling == "iid"
    editor.add_dimension("bad name", {"x": 1})
    assert editor.spec is None and "dimensions.2.name" in editor.message


def test_the_editor_builds_its_page(editor) -> None:
    editor.add_dimension("occupation", {"engineer": 1.0}, given="education")
    view = editor.__panel__()
    view.get_root()
    inputs = _find(view, _FloatInput)
    assert len(inputs) == 2 + 5 + 5  # one number per share, per parent table
    high_school = next(w for w in inputs if w.label == "high school")
    high_school.value = 0.5  # typing a share: the editor's state follows
    assert editor.spec is None and "shares sum to 1.3" in editor.share_notes[0]
    assert "shares sum to 1.3" in _texts(view)


def _load_text(text: str, like: Path) -> PopulationSpec:
    """Load YAML text as the CLI would load it from `like` (the same source name)."""
    from workbench.config import parse_yaml, validate

    return validate(PopulationSpec, parse_yaml(text), str(like))


def _find(view, kind) -> list:
    return list(view.select(kind))


def _texts(view) -> str:
    parts = [shown_text(p) for p in view.select(lambda o: isinstance(o, Alert | Markdown | Str))]
    return "\n".join(parts)


def test_the_editor_is_what_its_page_draws() -> None:
    """The page knows the editor only as `EditedPopulation` (so the editor's import of its page
    is the one arrow between them): every member it names is the editor's, a method with the
    same signature, a state one of the editor's params."""
    methods = [
        name
        for name, value in vars(EditedPopulation).items()
        if inspect.isfunction(value) and not name.startswith("__")
    ]
    for name in methods:
        ours, page = getattr(PopulationEditor, name), getattr(EditedPopulation, name)
        assert inspect.signature(ours) == inspect.signature(page), name
    states = [name for name in EditedPopulation.__annotations__ if name != "param"]
    assert len(methods) == 12 and states == ["dimensions", "action_failed"]
    assert all(name in PopulationEditor.param for name in states)
