"""PopulationEditor: edits give the spec the CLI would read, messages are the CLI's ConfigError
text, shares are normalized or say why not, and YAML files round-trip. No browser: params are
set and state asserted, and `__panel__()` is built into a Bokeh model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pane_text import shown_text
from panel.pane import Alert, Markdown, Str
from panel.widgets import FloatInput as _FloatInput
from panel.widgets import Tabulator as _Tabulator

import workbench.ui
from workbench.bench.startup import heavy_modules_loaded
from workbench.config import PopulationSpec, load_population_spec
from workbench.errors import ConfigError
from workbench.ui import PersonaPreview, PopulationEditor

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


def test_shares_that_cannot_be_normalized_say_why(editor) -> None:
    preview = PersonaPreview.for_editor(editor)
    for category in list(editor.spec.dimension("gender").shares):
        editor.set_share("gender", category, 0.0)
    assert editor.spec is None and preview.personas is None
    assert "cannot be normalized" in editor.share_notes[0]
    with pytest.raises(ConfigError, match="cannot normalize: the shares sum to 0"):
        editor.normalize("gender")
    editor._act(editor.normalize, "gender")  # what the Normalize button does
    assert "cannot normalize" in editor.action_message
    assert "shares must sum to 1, got 0" in preview.message


def test_n_zero_gives_a_message_and_no_table(editor) -> None:
    preview = PersonaPreview.for_editor(editor)
    editor.n = 0
    assert preview.personas is None and preview.counts is None
    assert preview.message == "n must be >= 1, got 0"  # sample_population's ConfigError
    view = preview.__panel__()
    view.get_root()
    assert not _find(view, _Tabulator) and "n must be >= 1, got 0" in _texts(view)


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
