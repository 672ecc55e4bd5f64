"""The RunLauncher's settings: a `RunConfig` draft edited through a form made from the specs.

`LaunchSettings.values` holds the form's value of every config key the form shows
(`spec_form.spec_fields(RunConfig)`: the game, prompt, policy, model and backend, with the
specs' own defaults, bounds, choices and descriptions); the population, its size and seed come
from the PopulationEditor (`for_editor`). `config()` is the one `RunConfig` they describe: the
keys that differ from their defaults, and apply to the chosen kinds, go through the one
override function (`config.overrides.apply_overrides`, what `workbench run --set` calls), so a
bad value gives the CLI's one-line ConfigError; `problem` shows it as you type. "Open config"
and "Save config" read and write a YAML inside the workspace that `workbench run` plays as is.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Self

import panel as pn
import param

from workbench._examples import example_path
from workbench._files import atomic_write_text
from workbench.config import (
    MAX_AGENTS,
    PopulationSpec,
    RunConfig,
    apply_overrides,
    load_run_config,
    to_yaml,
    validate,
)
from workbench.errors import ConfigError, WorkbenchError
from workbench.experiment.grid import value_at
from workbench.ui.safe_text import md
from workbench.ui.spec_form import FormField, applies, css_class, spec_fields
from workbench.ui.workspace import inside, results_dir_param, workspace_param, yaml_target

__all__ = ["FORM_SKIP", "LaunchSettings", "form_fields", "quickstart_population"]

FORM_SKIP = ("population", "n_agents", "seed", "models", "model_shares", "output.dir")
"""Config keys the generated form leaves out: the population, its size and seed are the
PopulationEditor's (`for_editor`); a mixed population's named models are set in a config
file (Open config); `output.dir` is the dashboard's results folder. (`output`'s other keys,
such as keeping exact distributions, are the form's.)"""

FORM_FIXED = ("backend.address",)
"""Config keys the page never takes: the Ray address is the dashboard's --ray."""

PATH_KEYS = ("model.bundle", "model.path", "model.cache")
"""Config keys holding a path the run reads or writes: kept inside the workspace."""

SECTION_TITLES = {"run": "Run", "game": "Game", "game.prompt": "Prompt", "output": "Keep"}
"""Form section titles where the section's key does not say it (the rest: capitalised)."""


@cache
def quickstart_population() -> PopulationSpec:
    """The quickstart example's population (the paper's education population)."""
    population = load_run_config(example_path("quickstart")).population
    assert isinstance(population, PopulationSpec)
    return population


@cache
def form_fields() -> tuple[FormField, ...]:
    """The launcher's form: every RunConfig key but FORM_SKIP and FORM_FIXED, the model's
    only for the llm policy."""
    return tuple(
        spec_fields(
            RunConfig,
            skip=FORM_SKIP + FORM_FIXED,
            section_when={
                "model": ("policy.kind", ("llm",)),
                "output": ("policy.kind", ("llm",)),  # what it keeps is the model's
            },
        )
    )


def _defaults() -> dict[str, Any]:
    return {field.key: field.default for field in form_fields()}


class LaunchSettings(param.Parameterized):
    """Everything a run is configured with; `config()` is the RunConfig they describe."""

    CONFIG_INPUTS = (
        "results_dir",
        "ray_address",
        "population",
        "population_problem",
        "n_agents",
        "seed",
        "values",
    )
    """The parameters `config()` reads: a change to any is a different run."""

    @classmethod
    def for_editor(cls, editor: Any, **params: Any) -> Self:
        """Settings (a RunLauncher, called on it) following a PopulationEditor: its spec, its
        message (an invalid spec starts nothing), its N and seed (the run plays the agents
        the preview shows). Open config sends a config's population back to the editor."""
        settings = cls(
            population=editor.param.spec,
            population_problem=editor.param.message,
            n_agents=editor.param.n,
            seed=editor.param.seed,
            **params,
        )
        settings._editor = editor
        return settings

    # ---- where runs go ----------------------------------------------------------------------
    results_dir = results_dir_param(
        "the results folder: bundles go here, launch records in its .launches/"
    )
    ray_address = param.String(
        None,
        allow_None=True,
        doc="Ray cluster address for backend ray (backend.address): the dashboard's --ray, "
        "never typed in the page; None: the run's process starts a local Ray cluster",
    )
    workspace = workspace_param()

    # ---- who plays (the PopulationEditor's) --------------------------------------------------
    population = param.ClassSelector(
        class_=PopulationSpec,
        default=None,
        allow_None=True,
        allow_refs=True,
        doc="the population (bind it to PopulationEditor.param.spec); None: the quickstart "
        "example's education population, unless population_problem says why there is none",
    )
    population_problem = param.String(
        "",
        allow_refs=True,
        doc="why there is no population (bind it to PopulationEditor.param.message): while "
        "set, config() raises it and nothing starts",
    )
    n_agents = param.Integer(
        50,
        bounds=(0, MAX_AGENTS),
        allow_refs=True,
        label="Agents",
        doc="agents in the game (0 is refused by config() with the CLI's message)",
    )
    seed = param.Integer(
        42, bounds=(0, None), allow_refs=True, label="Seed", doc="the run's seed (personas too)"
    )

    # ---- the rest of the config -----------------------------------------------------------
    values = param.Dict(
        default={},
        doc="the form's value of each config key it shows (dotted key -> config data); keys "
        "not given take the spec's default",
    )
    config_path = param.String("run.yaml", label="Config file", doc="Open/Save config's file")
    problem = param.String("", doc="output: why config() fails now (checked as you type)")
    message = param.String(
        "", doc="output: why nothing started (a ConfigError or model error), or what happened"
    )
    message_failed = param.Boolean(False, doc="output: message is an error")

    def __init__(self, **params: Any) -> None:
        given = dict(params.pop("values", {}) or {})
        super().__init__(**params)
        self._editor: Any = None
        self._widgets: dict[str, pn.widgets.Widget] = {}
        self._sections: dict[str, pn.Column] = {}
        self.set(**given)
        self.param.watch(self._check, ["population", "population_problem", "n_agents", "seed"])

    # ---- values -------------------------------------------------------------------------------

    def set(self, **changes: Any) -> None:
        """Set form values by dotted key (`set(**{"game.rounds": 3})`); ConfigError naming an
        unknown key. The widgets follow, and `problem` is checked again."""
        known = _defaults()
        unknown = sorted(set(changes) - set(known))
        if unknown:
            raise ConfigError(
                f"{', '.join(unknown)}: not a setting of the form; the form sets "
                f"{', '.join(sorted(known))}"
            )
        self.values = known | dict(self.values) | changes

    @staticmethod
    def usable_values(values: Any) -> tuple[dict[str, Any], list[str]]:
        """(the form values among `values` that a field of the form can hold, the keys
        refused): values from outside the page, such as the page's kept state, pass here
        before `set`, as a typed value passes its widget."""
        usable: dict[str, Any] = {}
        refused: list[str] = []
        fields = {f.key: f for f in form_fields()}
        for key, value in (values if isinstance(values, dict) else {}).items():
            field = fields.get(key)
            try:
                if field is None:
                    raise ValueError(key)
                field.widget(value)  # the widget a typed value passes through
            except (ValueError, TypeError, WorkbenchError):
                refused.append(str(key))
                continue
            usable[key] = value
        return usable, refused

    def overrides(self) -> dict[str, Any]:
        """The form's values that differ from the spec defaults and apply to the kinds chosen:
        what `workbench run --set` would be given."""
        values = _defaults() | dict(self.values)
        return {
            f.key: values[f.key]
            for f in form_fields()
            if applies(f, values) and values[f.key] != f.default
        }

    def config(self) -> RunConfig:
        """The RunConfig the settings describe; ConfigError (the CLI's message) otherwise."""
        if self.population_problem:
            raise ConfigError(self.population_problem)
        population = self.population if self.population is not None else quickstart_population()
        base = validate(
            RunConfig,
            {
                "population": population.model_dump(mode="json"),
                "n_agents": self.n_agents,
                "seed": self.seed,
            },
            "run config",
        )
        overrides = self.overrides()
        for key in PATH_KEYS:
            if overrides.get(key):
                overrides[key] = str(inside(self.workspace, overrides[key], key))
        if overrides.get("backend.kind") == "ray" and self.ray_address:
            overrides["backend.address"] = self.ray_address
        return apply_overrides(base, overrides, "run config")

    @param.depends("values", watch=True)
    def _follow(self) -> None:
        """The widgets show the values (set from code, or opened) and the fields that apply."""
        values = _defaults() | dict(self.values)
        for field in form_fields():
            widget = self._widgets.get(field.key)
            if widget is None:
                continue
            shown = field.shown(values[field.key])
            if widget.value != shown:
                widget.value = shown
            widget.visible = applies(field, values)
        for section, column in self._sections.items():
            column.visible = any(applies(f, values) for f in form_fields() if f.section == section)
        self._check()

    def _check(self, *_: Any) -> None:
        try:
            self.config()
        except WorkbenchError as exc:
            self.problem = str(exc)
        else:
            self.problem = ""

    # ---- files --------------------------------------------------------------------------------

    def open_config(self, path: str | Path | None = None) -> RunConfig:
        """Show a run config YAML (inside the workspace) in the form; its population, size
        and seed go to the editor. ConfigError (nothing changes) for a bad file."""
        given = str(path if path is not None else self.config_path)
        config = load_run_config(inside(self.workspace, given, "open"))
        data = config.model_dump(mode="json")
        changes = {f.key: value_at(data, f.key) for f in form_fields()}
        self.values = _defaults() | changes
        population = config.population
        with param.parameterized.batch_call_watchers(self):
            if self._editor is not None and isinstance(population, PopulationSpec):
                self._editor.set_data(population.model_dump(mode="json"), given)
                self._editor.n, self._editor.seed = config.n_agents, config.seed
            else:
                self.population = population if isinstance(population, PopulationSpec) else None
                self.n_agents, self.seed = config.n_agents, config.seed
        self.config_path = given
        return config

    def save_config(self, path: str | Path | None = None) -> Path:
        """Write the config the form describes as YAML inside the workspace (fractions as
        written, `ratio: 2/3`), atomically; ConfigError while it is invalid."""
        given = str(path if path is not None else self.config_path)
        target = yaml_target(self.workspace, given)
        written = atomic_write_text(target, to_yaml(self.config(), as_written=True))
        self.config_path = given
        return written

    # ---- the form -----------------------------------------------------------------------------

    def _widget(self, field: FormField, value: Any) -> pn.widgets.Widget:
        widget = field.widget(value)

        def changed(event: param.parameterized.Event) -> None:
            try:
                new = field.read(event.new)
            except WorkbenchError as exc:
                self.problem = str(exc)
                return
            if (_defaults() | dict(self.values))[field.key] != new:
                self.values = dict(self.values) | {field.key: new}

        widget.param.watch(changed, "value")
        return widget

    def settings_view(self) -> pn.viewable.Viewable:
        """The settings form, section by section (built once, shown wherever asked)."""
        if not self._widgets:
            values = _defaults() | dict(self.values)
            for field in form_fields():
                self._widgets[field.key] = self._widget(field, values[field.key])
            who = self._who()
            for field in form_fields():
                section = field.section
                if section not in self._sections:
                    title = SECTION_TITLES.get(section, section.rsplit(".", 1)[-1].capitalize())
                    self._sections[section] = pn.Column(
                        pn.pane.Markdown(f"**{md(title)}**"), width=300
                    )
                    if section == "run":
                        self._sections[section].extend(who)
                self._sections[section].append(field.placed(self._widgets[field.key]))
            self._follow()
        files = pn.Row(
            pn.widgets.TextInput.from_param(self.param.config_path, width=240),
            _button("Open config", self._on_open, "open"),
            _button("Save config", self._on_save, "save"),
            align="end",
        )
        return pn.Column(
            pn.FlexBox(*self._sections.values()),
            files,
            sizing_mode="stretch_width",
        )

    def _who(self) -> list[pn.viewable.Viewable]:
        """The run's Agents and Seed inputs, for settings alone on a page. Following an editor
        there are none: the editor's Agents and Seed set them (where the preview shows those
        agents; one pair of inputs on the page), and the Run tab's line on who plays names
        them."""
        if self._editor is not None:
            return []
        return [
            pn.widgets.IntInput.from_param(
                self.param.n_agents, css_classes=[css_class("n_agents")]
            ),
            pn.widgets.IntInput.from_param(self.param.seed, css_classes=[css_class("seed")]),
        ]

    def _on_open(self, _: Any) -> None:
        self._file_action(lambda: f"opened {self.open_config()}")

    def _on_save(self, _: Any) -> None:
        self._file_action(lambda: f"saved {self.save_config()}")

    def _file_action(self, action: Any) -> None:
        """Run Open/Save; its outcome goes to `message`."""
        try:
            text, failed = action(), False
        except (WorkbenchError, OSError) as exc:
            text, failed = str(exc), True
        self._say(text, failed)

    def _say(self, text: str, failed: bool) -> None:
        with param.parameterized.batch_call_watchers(self):
            self.message, self.message_failed = text, failed


def _button(label: str, action: Any, css: str) -> pn.widgets.Button:
    button = pn.widgets.Button(  # with a colour: a plain outline draws as bare text here
        label=label,
        color="primary",
        variant="outline",
        css_classes=[f"wb-config-{css}"],
        align="end",
    )
    button.on_click(action)
    return button
