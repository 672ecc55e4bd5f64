"""The launcher's form is made from the specs: their fields, defaults, bounds, choices and
descriptions, shown where their kind applies; Open and Save config read and write what
`workbench run` plays."""

from __future__ import annotations

from pathlib import Path

import panel as pn
import pytest
from pydantic import Field

from workbench.config import (
    POLICY_SPECS,
    DimensionSpec,
    GameSpec,
    ModelSpec,
    PopulationSpec,
    RunConfig,
    load_run_config,
    parse_assignments,
    to_yaml,
)
from workbench.errors import ConfigError
from workbench.experiment.grid import value_at
from workbench.ui import PopulationEditor
from workbench.ui.launch_settings import FORM_FIXED, FORM_SKIP, form_fields
from workbench.ui.population_page import PLAYED
from workbench.ui.run_launcher import RunLauncher, quickstart_population
from workbench.ui.spec_form import applies, spec_fields


def leaf_keys(data: dict, prefix: str = "") -> set[str]:
    """The dotted keys of a config's leaves (a policy's tables are leaves)."""
    keys: set[str] = set()
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and not name.startswith("policy."):
            keys |= leaf_keys(value, f"{name}.")
        else:
            keys.add(name)
    return keys


def default_config() -> RunConfig:
    return RunConfig(population=quickstart_population(), n_agents=50, seed=42)


def test_the_forms_defaults_are_the_specs_and_every_key_is_there() -> None:
    defaults = default_config().model_dump(mode="json")
    fields = {f.key: f for f in form_fields()}
    values = {key: value_at(defaults, key) for key in fields}
    for key, field in fields.items():
        if applies(field, values):  # the default policy's and model's fields
            assert field.default == values[key] or str(field.default) == str(values[key]), key
        else:
            assert field.when and field.when[-1][0] in ("policy.kind", "model.kind"), key
    every = {k for k in leaf_keys(defaults) if k.split(".")[0] not in ("model", "policy")}
    every |= {f"model.{k}" for k in ModelSpec.model_fields}
    every |= {f"policy.{k}" for spec in POLICY_SPECS for k in spec.model_fields}
    left_out = {
        k for k in every if k.split(".")[0] in FORM_SKIP or k in FORM_SKIP or k in FORM_FIXED
    }
    assert set(fields) == every - left_out
    assert RunLauncher(results_dir="unused").config() == default_config()


def test_the_form_follows_a_changed_default_and_a_new_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ModelSpec.model_fields["max_tokens"], "default", 16)
    form_fields.cache_clear()
    try:
        launcher = RunLauncher(results_dir="unused")
        launcher.settings_view()
        assert launcher._widgets["model.max_tokens"].value == 16
    finally:
        form_fields.cache_clear()

    class Extended(GameSpec):
        knob: int = Field(7, ge=1, le=9, description="a new knob of the game")

    (knob,) = [f for f in spec_fields(Extended) if f.key == "knob"]
    assert (knob.label, knob.default, knob.bounds) == ("Knob", 7, (1, 9))
    widget = knob.widget(knob.default)
    assert isinstance(widget, pn.widgets.IntInput)
    assert (widget.value, widget.start, widget.end) == (7, 1, 9)
    assert widget.description == "a new knob of the game"


def test_fields_show_only_where_their_kind_applies() -> None:
    launcher = RunLauncher(results_dir="unused")
    launcher.settings_view()
    shown = lambda key: launcher._widgets[key].visible  # noqa: E731
    assert shown("model.n_threads") and not shown("model.base_urls")
    launcher._widgets["model.kind"].value = "openai"
    assert shown("model.base_urls") and shown("model.api_key_env")
    assert not shown("model.n_threads")
    assert "kind openai needs base_urls" in launcher.problem  # checked as typed
    launcher._widgets["model.base_urls"].value = "http://127.0.0.1:9/v1, http://127.0.0.1:8/v1"
    launcher._widgets["model.name"].value = "m"
    assert launcher.problem == ""
    assert launcher.config().model.base_urls == ["http://127.0.0.1:9/v1", "http://127.0.0.1:8/v1"]
    launcher._widgets["policy.kind"].value = "random"
    assert not shown("model.kind") and not launcher._sections["model"].visible
    assert shown("policy.latency_s") and not shown("policy.extract_number")
    assert launcher.config().policy.kind == "random"


def test_fractions_read_and_show_as_written() -> None:
    launcher = RunLauncher(results_dir="unused")
    launcher.settings_view()
    ratio = launcher._widgets["game.ratio"]
    assert ratio.value == "2/3"
    ratio.value = "51/100"
    assert launcher.config().game.ratio == 0.51
    ratio.value = "2"
    assert launcher.problem == "run config: game.ratio: must be in (0, 1], got 2.0"


def test_the_form_and_the_command_line_give_the_same_config() -> None:
    keys = {"game.ratio": "1/2", "model.temperature": 0, "game.rounds": 3}
    launcher = RunLauncher(results_dir="unused", values=keys)
    from workbench.config import apply_overrides

    assert launcher.config() == apply_overrides(default_config(), keys)
    assert launcher.config() == apply_overrides(
        default_config(),
        parse_assignments(["game.ratio=1/2", "model.temperature=0", "game.rounds=3"]),
    )
    with pytest.raises(ConfigError, match="game.nope: not a setting of the form"):
        launcher.set(**{"game.nope": 1})


def test_save_writes_what_workbench_run_plays_and_open_reads_it_back(tmp_path: Path) -> None:
    editor = PopulationEditor(spec=quickstart_population(), n=50)
    launcher = RunLauncher.for_editor(
        editor,
        results_dir=str(tmp_path / "results"),
        workspace=str(tmp_path),
        values={"policy.kind": "level_k", "policy.tau": 1.5, "game.rounds": 3},
    )
    editor.n, editor.seed = 33, 4
    saved = launcher.save_config("runs/lk.yaml")
    assert saved == (tmp_path / "runs" / "lk.yaml").resolve()
    assert "ratio: 2/3" in saved.read_text()
    assert load_run_config(saved) == launcher.config()  # what `workbench run` plays
    with pytest.raises(ConfigError, match="outside the workspace"):
        launcher.save_config("../elsewhere.yaml")

    other = PopulationEditor(spec=quickstart_population(), n=50)
    fresh = RunLauncher.for_editor(other, results_dir=str(tmp_path), workspace=str(tmp_path))
    fresh.open_config("runs/lk.yaml")
    assert fresh.config() == launcher.config()
    assert (other.n, other.seed) == (33, 4) and fresh.values["policy.tau"] == 1.5
    (tmp_path / "bad.yaml").write_text(to_yaml(default_config()).replace("rounds: 1", "rounds: 0"))
    with pytest.raises(ConfigError, match="game.rounds"):
        fresh.open_config("bad.yaml")
    assert fresh.config() == launcher.config()  # nothing changed


def test_the_population_editors_fields_are_the_specs() -> None:
    """Its scalar fields are params made from PopulationSpec's fields (label, description,
    default, choices); the dimensions are its table. A field added to the spec fails here
    until the editor shows it."""
    editor_params = {
        "name": "population_name",
        "description": "description",
        "sampling": "sampling",
        "persona_template": "persona_template",
    }
    assert set(PopulationSpec.model_fields) == set(editor_params) | {"dimensions"}
    editor = PopulationEditor()
    for key, name in editor_params.items():
        info = PopulationSpec.model_fields[key]
        declared = editor.param[name]
        assert declared.doc == info.description, key
        assert getattr(editor, name) == ("" if info.default is None else info.default), key
    assert editor.param["sampling"].objects == ["quota", "iid"]
    for name, key in (("n", "n_agents"), ("seed", "seed")):  # the run's own fields
        info = RunConfig.model_fields[key]
        doc = editor.param[name].doc
        assert doc == f"{info.description}: {PLAYED}" and getattr(editor, name) == info.default


def test_the_dimension_cards_carry_dimension_specs_descriptions() -> None:
    """Each dimension card's `given` and share inputs, and the new-dimension box, show
    DimensionSpec's own label and descriptions; a field added to DimensionSpec fails here
    until the cards show it."""
    assert set(DimensionSpec.model_fields) == {"name", "given", "shares"}
    editor = PopulationEditor(quickstart_population())
    view = editor.__panel__()
    widgets = [w for w in view.select(pn.widgets.Widget) if "description" in w.param]
    described = {w.description for w in widgets}
    for key in ("name", "given", "shares"):
        assert DimensionSpec.model_fields[key].description in described, key
    given = [w for w in widgets if isinstance(w, pn.widgets.Select) and w.label == "Given"]
    assert len(given) == len(editor.dimensions)
    shares = [w for w in widgets if isinstance(w, pn.widgets.FloatInput)]
    assert shares and all((w.start, w.end) == (0.0, 1.0) for w in shares)
    assert all(w.description == DimensionSpec.model_fields["shares"].description for w in shares)


def test_every_widget_of_the_form_carries_its_specs_description() -> None:
    """What tests/config/test_descriptions.py promises: the dashboard shows the specs' own
    descriptions (a field's tooltip; a checkbox's ⓘ icon beside it), never a second wording;
    the icon hides with its checkbox."""
    launcher = RunLauncher(results_dir="unused")
    launcher.settings_view()
    placed = {
        id(obj.objects[0]): obj
        for section in launcher._sections.values()
        for obj in section.objects
        if isinstance(obj, pn.Row)
    }
    for field in form_fields():
        widget = launcher._widgets[field.key]
        assert field.description, field.key
        if "description" in widget.param:
            assert widget.description == field.description, field.key
        else:
            assert isinstance(widget, pn.widgets.Checkbox), field.key
            icon = placed[id(widget)].objects[1]
            assert isinstance(icon, pn.widgets.TooltipIcon) and icon.value == field.description
    row = placed[id(launcher._widgets["model.constrained"])]
    launcher.set(**{"policy.kind": "random"})  # no model answers: its fields hide
    assert not launcher._widgets["model.constrained"].visible and not row.visible
    launcher.set(**{"policy.kind": "llm"})
    assert row.visible
