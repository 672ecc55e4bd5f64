"""PopulationEditor: edit a population spec in the page and get a valid `PopulationSpec` out.

The editor holds the spec as plain data (`dimensions`, a list of {name, given, shares}) that its
methods change; every change is validated by the same path the CLI reads files with
(`workbench.config.validate`), so `message` is the CLI's `ConfigError` text, and `spec` is the
current valid spec or None. The page shows each problem once, beside what it is about
(`problems`): a dimension's in its card, the spec's at the top, a refused Agents or Seed beside
its box. Shares that do not sum to 1 are named with their sum and a Normalize action (or kept
normalized as they are typed, with `auto_normalize`); the table arithmetic is `share_tables`'.
Agents and Seed are the run's: the preview samples these agents and the Run tab plays them.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import panel as pn
import param

from workbench.config import (
    MAX_AGENTS,
    PopulationSpec,
    RunConfig,
    field_problem,
    read_yaml,
    save_yaml,
    to_yaml,
    validate,
)
from workbench.config.base import share_table
from workbench.errors import ConfigError
from workbench.ui.population_page import FILES, NO_PARENT, PLAYED, TOP, Problem, editor_view
from workbench.ui.share_tables import (
    add_to_table,
    equal_split,
    normalized,
    rescale_others,
    table_note,
    tables,
    where,
)
from workbench.ui.share_tables import categories as _categories
from workbench.ui.spec_form import spec_field, spec_param
from workbench.ui.workspace import inside, workspace_param, yaml_target

__all__ = ["NO_PARENT", "PopulationEditor"]

RUN_FIELDS = {"n": "n_agents", "seed": "seed"}
"""The editor's params that are RunConfig fields, checked as typed by the spec's own rules."""

FIXES = {
    "n": f"type how many agents to play, 1 to {MAX_AGENTS:,}",
    "seed": "type a whole number, 0 or more",
}
"""The fix a refused Agents or Seed names."""


class PopulationEditor(pn.viewable.Viewer):
    """Edits a PopulationSpec: dimensions, categories, shares, conditioning, N, seed, YAML."""

    population_name = spec_param(PopulationSpec, "name", label="Name")
    description = spec_param(PopulationSpec, "description")
    sampling = spec_param(PopulationSpec, "sampling")
    persona_template = spec_param(PopulationSpec, "persona_template")
    dimensions = param.List(
        default=[],
        item_type=dict,
        doc="the dimensions as plain data, each {name, given, shares}: shares {category: share},"
        " or with given a parent dimension {parent category: {category: share}}; change it "
        "through the methods (add_dimension, set_share, ...) so each change is validated",
    )
    # bounds wide enough for a bound preview or launcher to refuse 0 with the CLI's message;
    # the page's box sets these only with values the spec takes (`type_value`)
    n = spec_param(
        RunConfig,
        "n_agents",
        label="Agents",
        bounds=(0, MAX_AGENTS),
        doc=f"{spec_field(RunConfig, 'n_agents').description}: {PLAYED}",
    )
    seed = spec_param(
        RunConfig,
        "seed",
        label="Seed",
        doc=f"{spec_field(RunConfig, 'seed').description}: {PLAYED}",
    )
    refused = param.Dict(
        default={},
        doc="the Agents (n) or Seed typed in the page that the run cannot take, by param; "
        "n and seed keep their last valid value, and `message` says why",
    )
    auto_normalize = param.Boolean(
        False,
        label="Keep shares normalized",
        doc="when on, setting a share rescales the other shares of its table so they sum to 1",
    )
    path = param.String(
        "",
        label="YAML file",
        doc="the spec file that Load reads and Save writes (inside `workspace` when set)",
    )
    workspace = workspace_param()
    source = param.String(
        "population spec",
        doc="what validation messages start with: the loaded file's path, like the CLI's",
    )
    spec = param.ClassSelector(
        class_=PopulationSpec,
        default=None,
        allow_None=True,
        doc="output: the current valid PopulationSpec, or None while `message` says why not",
    )
    message = param.String(
        "",
        doc="output: why the edits cannot run ('' when they can): the spec's ConfigError text "
        "(the CLI's), then a refused Agents or Seed",
    )
    share_notes = param.List(
        default=[],
        item_type=str,
        doc="output: one line per share table that does not sum to 1, with its sum and the fix",
    )
    problems = param.List(
        default=[],
        item_type=tuple,
        doc="output: each problem once as (place, text), where the page shows it: '' the top, "
        "a dimension's name its card, ':n' and ':seed' beside those boxes",
    )
    action_message = param.String(
        "", doc="output: the outcome of the last load, save or edit action (errors included)"
    )
    action_place = param.String(
        TOP, doc="output: where the page shows action_message (a place as in `problems`)"
    )
    action_failed = param.Boolean(False, doc="output: action_message is an error")

    def __init__(self, spec: PopulationSpec | None = None, **params: Any) -> None:
        super().__init__(**params)
        self.param.watch(self._set_from_code, list(RUN_FIELDS))
        if spec is not None:
            self.set_spec(spec)

    # ---- the spec as data -------------------------------------------------------------------

    def data(self) -> dict[str, Any]:
        """The edits as the plain data a YAML spec file holds."""
        dims = []
        for dim in self.dimensions:
            entry: dict[str, Any] = {"name": dim["name"]}
            if dim.get("given") is not None:
                entry["given"] = dim["given"]
            entry["shares"] = copy.deepcopy(dim["shares"])
            dims.append(entry)
        return {
            "name": self.population_name,
            "description": self.description,
            "sampling": self.sampling,
            "dimensions": dims,
            "persona_template": self.persona_template or None,
        }

    def set_spec(self, spec: PopulationSpec, source: str = "population spec") -> None:
        """Show `spec` for editing (its shares as floats)."""
        self.set_data(spec.model_dump(mode="json"), source)

    def set_data(self, data: Any, source: str) -> None:
        """Show plain spec data for editing, valid or not, so its problems can be fixed here.

        ConfigError (nothing changes) when the data is too far from a spec to edit."""
        if not isinstance(data, Mapping):
            validate(PopulationSpec, data, source)  # raises the CLI's message for non-mappings
            raise ConfigError(f"{source}: expected a mapping of keys")  # pragma: no cover
        raw_dims = data.get("dimensions") or []
        if not isinstance(raw_dims, list) or not all(isinstance(d, Mapping) for d in raw_dims):
            validate(PopulationSpec, data, source)
            raise ConfigError(f"{source}: dimensions: expected a list of mappings")
        dims = [_editable_dimension(d, source) for d in raw_dims]
        template = data.get("persona_template")
        with param.parameterized.batch_call_watchers(self):
            self.source = source
            self.population_name = str(data.get("name", "population"))
            self.description = str(data.get("description") or "")
            if data.get("sampling", "quota") in ("quota", "iid"):
                self.sampling = data.get("sampling", "quota")
            self.persona_template = "" if template is None else str(template)
            self.dimensions = dims
        self._validate()

    # ---- files ------------------------------------------------------------------------------

    def load(self, path: str | Path | None = None) -> None:
        """Read a spec YAML file (safe loading) into the editor; ConfigError for a file that
        cannot be read or lies outside the workspace. An invalid spec is loaded with its
        message, to be fixed here."""
        given = path if path is not None else self.path
        if not str(given).strip():
            raise ConfigError("load: type the YAML file's name first")
        found = inside(self.workspace, given, "load")
        self.set_data(read_yaml(found), str(given))
        self.path = str(given)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the current spec as YAML (atomically); ConfigError while it is invalid, or
        for a target outside the workspace or not a .yaml/.yml file."""
        if self.spec is None:
            raise ConfigError(f"cannot save: {self.message}")
        given = path if path is not None else self.path
        written = save_yaml(self.spec, yaml_target(self.workspace, given))
        self.path = str(given)
        return written

    def yaml_text(self) -> str:
        """The current spec as YAML text; ConfigError while it is invalid."""
        if self.spec is None:
            raise ConfigError(f"cannot save: {self.message}")
        return to_yaml(self.spec)

    # ---- edits ------------------------------------------------------------------------------

    def add_dimension(
        self, name: str, shares: Mapping[str, float] | None = None, given: str | None = None
    ) -> None:
        """Add a dimension (last) with `shares` ({category: share}; none: no categories yet,
        each category added then splits it equally); `given` makes it conditional on an
        earlier dimension, each parent category starting from the same shares."""
        name = name.strip()
        if not name:
            raise ConfigError("add dimension: type a name first")
        if any(d["name"] == name for d in self.dimensions):
            raise ConfigError(f"dimension {name!r} exists already; choose another name")
        table = share_table(dict(shares or {}), f"dimension {name!r}")
        dims = self._copy()
        dims.append({"name": name, "given": None, "shares": table})
        self._commit(dims)
        if given is not None:
            self.set_given(name, given)

    def remove_dimension(self, name: str) -> None:
        """Remove a dimension; ConfigError while another dimension is given it."""
        self._find(name)
        children = [d["name"] for d in self.dimensions if d.get("given") == name]
        if children:
            raise ConfigError(
                f"dimension {name!r} is given to {children}; set their given to none first"
            )
        self._commit([d for d in self._copy() if d["name"] != name])

    def add_category(self, dimension: str, category: str, share: float | None = None) -> None:
        """Add a category to every table of a dimension; dimensions given this one get a table
        for it, with equal shares.

        With no `share`, a table that is empty or still all-equal is split equally again over
        its categories and the new one (a new dimension's categories come at equal shares, and
        the spec stays valid); a table whose shares the person has shaped keeps them, and the
        new category starts at 0 for them to give it a share. A `share` is set as given."""
        category = category.strip()
        if not category:
            raise ConfigError(f"dimension {dimension!r}: type a category name first")
        dims = self._copy()
        dim = _named(dims, dimension)
        if category in _categories(dim):
            raise ConfigError(f"dimension {dimension!r}: category {category!r} exists already")
        for table in tables(dim).values():
            add_to_table(table, category, share)
        for child in dims:
            if child.get("given") == dimension:
                child["shares"][category] = equal_split(_categories(child))
        self._commit(dims)

    def remove_category(self, dimension: str, category: str) -> None:
        """Remove a category (from every table); dimensions given this one lose its table."""
        dims = self._copy()
        dim = _named(dims, dimension)
        if category not in _categories(dim):
            raise ConfigError(f"dimension {dimension!r} has no category {category!r}")
        for table in tables(dim).values():
            table.pop(category, None)
        for child in dims:
            if child.get("given") == dimension:
                child["shares"].pop(category, None)
        self._commit(dims)

    def set_share(
        self, dimension: str, category: str, share: float, parent: str | None = None
    ) -> None:
        """Set one share (`parent`: which table of a conditional dimension). With
        `auto_normalize` the table's other shares are rescaled so the table sums to 1."""
        dims = self._copy()
        dim = _named(dims, dimension)
        by_parent = tables(dim)
        key = parent if dim.get("given") is not None else ""
        if key not in by_parent:
            if dim.get("given") is not None:
                raise ConfigError(
                    f"dimension {dimension!r} is given {dim['given']!r}: name the parent "
                    f"category, one of {list(by_parent)}"
                )
            raise ConfigError(f"dimension {dimension!r} is not conditional: give no parent")
        table = by_parent[key]
        if category not in table:
            raise ConfigError(f"dimension {dimension!r} has no category {category!r}")
        share = float(share)
        if self.auto_normalize:
            if not 0 <= share <= 1:
                raise ConfigError(
                    f"dimension {dimension!r}: share of {category!r} must be in [0, 1], got {share}"
                )
            rescale_others(table, category, share)
        else:
            table[category] = share
        self._commit(dims)

    def set_given(self, dimension: str, given: str | None) -> None:
        """Condition a dimension on an earlier one (each parent category starts from its
        current shares), or make it unconditional (None: the mean of its tables)."""
        dims = self._copy()
        dim = _named(dims, dimension)
        if given == dim.get("given"):
            return
        every = list(tables(dim).values())
        cats = _categories(dim)
        mean = {c: sum(t.get(c, 0.0) for t in every) / max(len(every), 1) for c in cats}
        if given is None:
            dim["given"], dim["shares"] = None, mean
        else:
            names = [d["name"] for d in dims]
            parent = _named(dims, given)
            if names.index(given) >= names.index(dimension):
                raise ConfigError(
                    f"dimension {dimension!r} can only be given an earlier dimension, "
                    f"one of {names[: names.index(dimension)]}"
                )
            dim["given"] = given
            dim["shares"] = {p: dict(mean) for p in _categories(parent)}
        self._commit(dims)

    def normalize(self, dimension: str | None = None) -> None:
        """Rescale each share table (of `dimension`, or all) to sum to 1; a table whose shares
        are all 0 is split equally. ConfigError naming a table that cannot be (a negative
        share), and nothing changes."""
        dims = self._copy()
        if dimension is not None:
            _named(dims, dimension)
        for dim in dims:
            if dimension is not None and dim["name"] != dimension:
                continue
            for parent, table in tables(dim).items():
                try:
                    table.update(normalized(table))
                except ValueError as exc:
                    raise ConfigError(f"{where(dim, parent)}: cannot normalize: {exc}") from None
        self._commit(dims)

    def type_value(self, name: str, value: Any) -> None:
        """Agents (`n`) or Seed as typed in the page: a value the run takes (RunConfig's rules)
        becomes `n`/`seed`; another is kept in `refused`, so `message` (and the page, beside
        the box) says why and what to type, and `n`/`seed` keep their last valid value."""
        problem = field_problem(RunConfig, RUN_FIELDS[name], value)
        refused = {k: v for k, v in self.refused.items() if k != name}
        with param.parameterized.batch_call_watchers(self):
            if problem is None:
                setattr(self, name, value)
            else:
                refused[name] = value
            self.refused = refused

    def _set_from_code(self, event: param.parameterized.Event) -> None:
        """A valid value set (opened config, regenerated preview) replaces a refused one."""
        if event.name in self.refused:
            self.refused = {k: v for k, v in self.refused.items() if k != event.name}

    # ---- validation -------------------------------------------------------------------------

    @param.depends(
        "dimensions", "population_name", "description", "sampling", "persona_template",
        "refused", watch=True, on_init=True,
    )  # fmt: skip
    def _validate(self) -> None:
        """Validate the edits as the CLI validates a file; set spec, message, share notes and
        the problems, each once, at its place in the page."""
        notes: list[str] = []
        problems: list[Problem] = []
        for dim in self.dimensions:
            for parent, table in tables(dim).items():
                note = table_note(dim, parent, table)
                if note is not None:
                    notes.append(note)
                    problems.append((dim["name"], note))
        try:
            spec = validate(PopulationSpec, self.data(), self.source)
            texts = []
        except ConfigError as exc:
            spec, texts = None, [str(exc)]
            noted = {place for place, _ in problems}
            problems += _placed(exc, self.dimensions, noted)
        for name, value in self.refused.items():
            label = self.param[name].label
            problem = field_problem(RunConfig, RUN_FIELDS[name], value)
            text = f"{label}: {problem}; {FIXES[name]}"
            texts.append(text)
            problems.append((f":{name}", text))
        with param.parameterized.batch_call_watchers(self):
            self.share_notes = notes
            self.problems = problems
            self.message = "; ".join(texts)
            self.spec = spec

    def _copy(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self.dimensions)

    def _commit(self, dims: list[dict[str, Any]]) -> None:
        self.dimensions = dims

    def _find(self, name: str) -> dict[str, Any]:
        return _named(self.dimensions, name)

    def _act(self, action: Callable[..., Any], *args: Any, place: str = TOP) -> None:
        """Run an edit for a widget: its ConfigError goes to `action_message`, shown at
        `place` (where the widget is), not a traceback."""
        self._say("", TOP)
        try:
            action(*args)
        except ConfigError as exc:
            self._say(str(exc), place, failed=True)

    def _say(self, text: str, place: str, failed: bool = False) -> None:
        with param.parameterized.batch_call_watchers(self):
            self.action_message, self.action_place, self.action_failed = text, place, failed

    # ---- the page ---------------------------------------------------------------------------

    def __panel__(self) -> pn.viewable.Viewable:
        """The editor's page (`population_page.editor_view`)."""
        return editor_view(self)

    def _save_action(self) -> None:
        if self.spec is None:
            raise ConfigError("cannot save while the spec has problems; they are marked above")
        written = self.save()
        self._say(f"saved to {written}", FILES)

    def _download(self) -> io.StringIO:
        try:
            return io.StringIO(self.yaml_text())
        except ConfigError as exc:
            self._say(str(exc), FILES, failed=True)
            return io.StringIO(f"# {exc}\n")


def _placed(exc: ConfigError, dims: list[dict[str, Any]], noted: set[str]) -> list[Problem]:
    """A ConfigError's problems at their places: one of `dimensions.<i>` in that dimension's
    card (less its path; not where the card's share notes already say it), the rest at the
    top with their field path."""
    placed: list[Problem] = []
    for loc, text in exc.problems or ((TOP, str(exc)),):
        parts = loc.split(".")
        if parts[0] == "dimensions" and len(parts) > 1 and parts[1].isdigit():
            index = int(parts[1])
            if index < len(dims):
                name, rest = dims[index]["name"], ".".join(parts[2:])
                if not (rest == "" and name in noted):
                    placed.append((name, f"{rest}: {text}" if rest else text))
                continue
        placed.append((TOP, f"{loc}: {text}" if loc else text))
    return placed


def _editable_dimension(raw: Mapping[str, Any], source: str) -> dict[str, Any]:
    """One dimension of plain data as editable {name, given, shares} with float shares."""
    name = str(raw.get("name", ""))
    given = raw.get("given")
    shares = raw.get("shares") or {}
    where = f"{source}: dimension {name!r}"
    if not isinstance(shares, Mapping):
        raise ConfigError(f"{where}: shares must be a mapping of category: share")
    if any(isinstance(v, Mapping) for v in shares.values()):
        tables = {str(k): share_table(dict(v or {}), where) for k, v in shares.items()}
        return {"name": name, "given": None if given is None else str(given), "shares": tables}
    try:
        table = share_table(dict(shares), where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return {"name": name, "given": None if given is None else str(given), "shares": table}


def _named(dims: list[dict[str, Any]], name: str) -> dict[str, Any]:
    for dim in dims:
        if dim["name"] == name:
            return dim
    raise ConfigError(f"unknown dimension {name!r}; known: {[d['name'] for d in dims]}")
