"""PopulationEditor: edit a population spec in the page and get a valid `PopulationSpec` out.

The editor holds the spec as plain data (`dimensions`, a list of {name, given, shares}) that its
methods change; every change is validated by the same path the CLI reads files with
(`workbench.config.validate`), so the message shown inline is the CLI's `ConfigError` text, and
`spec` is the current valid spec or None. Shares that do not sum to 1 are named with their sum
and a Normalize action (or kept normalized as they are typed, with `auto_normalize`).
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
    SHARE_TOLERANCE,
    DimensionSpec,
    PopulationSpec,
    RunConfig,
    read_yaml,
    save_yaml,
    to_yaml,
    validate,
)
from workbench.config.base import share_table
from workbench.errors import ConfigError
from workbench.ui.notices import notice
from workbench.ui.safe_text import html_text, md
from workbench.ui.spec_form import spec_field, spec_param, with_tooltip
from workbench.ui.workspace import inside, workspace_param, yaml_target

__all__ = ["NO_PARENT", "PopulationEditor"]

NO_PARENT = "(none)"
"""The `given` choice of an unconditional dimension in the page."""

DIMENSION = {key: spec_field(DimensionSpec, key) for key in ("name", "given", "shares")}
"""DimensionSpec's fields: the dimension cards' labels and tooltips are theirs."""

Table = dict[str, float]


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
    # 0 agents is allowed in the box, so that config() refuses it with the CLI's message
    n = spec_param(RunConfig, "n_agents", label="N (agents)", bounds=(0, MAX_AGENTS))
    seed = spec_param(RunConfig, "seed", label="Seed")
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
        "", doc="output: the ConfigError text of the current edits ('' when the spec is valid)"
    )
    share_notes = param.List(
        default=[],
        item_type=str,
        doc="output: one line per share table that does not sum to 1, with its sum and the fix",
    )
    action_message = param.String(
        "", doc="output: the outcome of the last load, save or edit action (errors included)"
    )

    def __init__(self, spec: PopulationSpec | None = None, **params: Any) -> None:
        super().__init__(**params)
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
        """Add a dimension (last) with `shares` ({category: share}; none: no categories yet);
        `given` makes it conditional on an earlier dimension, each parent category starting
        from the same shares."""
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

    def add_category(self, dimension: str, category: str, share: float = 0.0) -> None:
        """Add a category (to every table of a conditional dimension); dimensions given this one
        get a table for it, with equal shares."""
        category = category.strip()
        if not category:
            raise ConfigError(f"dimension {dimension!r}: type a category name first")
        dims = self._copy()
        dim = _named(dims, dimension)
        if category in _categories(dim):
            raise ConfigError(f"dimension {dimension!r}: category {category!r} exists already")
        for table in _tables(dim).values():
            table[category] = float(share)
        for child in dims:
            if child.get("given") == dimension:
                cats = _categories(child)
                child["shares"][category] = {c: 1 / len(cats) for c in cats} if cats else {}
        self._commit(dims)

    def remove_category(self, dimension: str, category: str) -> None:
        """Remove a category (from every table); dimensions given this one lose its table."""
        dims = self._copy()
        dim = _named(dims, dimension)
        if category not in _categories(dim):
            raise ConfigError(f"dimension {dimension!r} has no category {category!r}")
        for table in _tables(dim).values():
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
        tables = _tables(dim)
        key = parent if dim.get("given") is not None else ""
        if key not in tables:
            if dim.get("given") is not None:
                raise ConfigError(
                    f"dimension {dimension!r} is given {dim['given']!r}: name the parent "
                    f"category, one of {list(tables)}"
                )
            raise ConfigError(f"dimension {dimension!r} is not conditional: give no parent")
        table = tables[key]
        if category not in table:
            raise ConfigError(f"dimension {dimension!r} has no category {category!r}")
        share = float(share)
        if self.auto_normalize:
            if not 0 <= share <= 1:
                raise ConfigError(
                    f"dimension {dimension!r}: share of {category!r} must be in [0, 1], got {share}"
                )
            _rescale_others(table, category, share)
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
        tables = list(_tables(dim).values())
        cats = _categories(dim)
        mean = {c: sum(t.get(c, 0.0) for t in tables) / max(len(tables), 1) for c in cats}
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
        """Rescale each share table (of `dimension`, or all) to sum to 1; ConfigError naming a
        table that cannot be (all shares 0, or a negative share)."""
        dims = self._copy()
        for dim in dims:
            if dimension is not None and dim["name"] != dimension:
                continue
            for parent, table in _tables(dim).items():
                where = _where(dim, parent)
                negative = [c for c, s in table.items() if s < 0]
                if negative:
                    raise ConfigError(
                        f"{where}: cannot normalize: share of {negative[0]!r} is negative"
                    )
                total = sum(table.values())
                if total <= 0:
                    raise ConfigError(
                        f"{where}: cannot normalize: the shares sum to 0; give at least one "
                        "category a share above 0"
                    )
                for category in table:
                    table[category] = _tidy(table[category] / total)
        if dimension is not None:
            _named(dims, dimension)
        self._commit(dims)

    # ---- validation -------------------------------------------------------------------------

    @param.depends(
        "dimensions", "population_name", "description", "sampling", "persona_template",
        watch=True, on_init=True,
    )  # fmt: skip
    def _validate(self) -> None:
        """Validate the edits as the CLI validates a file; set spec, message and share notes."""
        notes = []
        for dim in self.dimensions:
            for parent, table in _tables(dim).items():
                total = sum(table.values())
                if table and abs(total - 1) > SHARE_TOLERANCE:
                    fix = (
                        "press Normalize to rescale them"
                        if total > 0 and min(table.values()) >= 0
                        else "they cannot be normalized: give a category a share above 0"
                        if total <= 0
                        else "they cannot be normalized: a share is negative"
                    )
                    notes.append(f"{_where(dim, parent)}: shares sum to {total:.4g}, not 1; {fix}")
        try:
            spec = validate(PopulationSpec, self.data(), self.source)
            message = ""
        except ConfigError as exc:
            spec, message = None, str(exc)
        with param.parameterized.batch_call_watchers(self):
            self.share_notes = notes
            self.message = message
            self.spec = spec

    def _copy(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self.dimensions)

    def _commit(self, dims: list[dict[str, Any]]) -> None:
        self.dimensions = dims

    def _find(self, name: str) -> dict[str, Any]:
        return _named(self.dimensions, name)

    def _act(self, action: Callable[..., Any], *args: Any) -> None:
        """Run an edit for a widget: its ConfigError goes to `action_message`, not a traceback."""
        self.action_message = ""
        try:
            action(*args)
        except ConfigError as exc:
            self.action_message = str(exc)

    # ---- the page ---------------------------------------------------------------------------

    def __panel__(self) -> pn.viewable.Viewable:
        """The editor's layout: settings, one card per dimension, files, and the messages."""
        settings = pn.Column(
            pn.widgets.TextInput.from_param(self.param.population_name),
            pn.widgets.TextInput.from_param(self.param.description),
            pn.Row(
                pn.widgets.IntInput.from_param(self.param.n, width=160),
                pn.widgets.IntInput.from_param(self.param.seed, width=120),
                pn.widgets.Select.from_param(self.param.sampling, width=120),
            ),
            pn.widgets.TextInput.from_param(self.param.persona_template),
            with_tooltip(
                pn.widgets.Checkbox.from_param(self.param.auto_normalize),
                str(self.param.auto_normalize.doc),
            ),
        )
        new_dimension = pn.widgets.TextInput(
            label="New dimension",
            placeholder="e.g. occupation",
            description=DIMENSION["name"].description,
        )
        add = pn.widgets.Button(label="Add dimension", color="primary")
        add.on_click(lambda _: self._act(self.add_dimension, new_dimension.value))
        normalize_all = pn.widgets.Button(label="Normalize all shares", variant="outline")
        normalize_all.on_click(lambda _: self._act(self.normalize))
        path = pn.widgets.TextInput.from_param(self.param.path, placeholder="population.yaml")
        load = pn.widgets.Button(label="Load", variant="outline")
        load.on_click(lambda _: self._act(self.load))
        save = pn.widgets.Button(label="Save", variant="outline")
        save.on_click(lambda _: self._act(self._save_action))
        download = pn.widgets.FileDownload(
            callback=self._download, filename="population.yaml", label="Download YAML"
        )
        return pn.Column(
            settings,
            pn.Row(new_dimension, add, normalize_all, align="end"),
            _Cards(self).column,
            pn.Row(path, load, save, download, align="end"),
            pn.bind(_messages, self.param.message, self.param.share_notes),
            pn.bind(_action_note, self.param.action_message),
        )

    def _save_action(self) -> None:
        written = self.save()
        self.action_message = f"saved to {written}"

    def _download(self) -> io.StringIO:
        try:
            return io.StringIO(self.yaml_text())
        except ConfigError as exc:
            self.action_message = str(exc)
            return io.StringIO(f"# {exc}\n")

    def _dimension_card(
        self, dim: dict[str, Any], earlier: list[str], boxes: dict[tuple[str, str, str], Any]
    ) -> pn.Card:
        """A dimension's card: given, a number per share (kept in `boxes` by (dimension,
        parent, category)), add/remove categories, normalize, remove."""
        name = dim["name"]
        given = pn.widgets.Select(
            label=DIMENSION["given"].label,
            description=DIMENSION["given"].description,
            options=[NO_PARENT, *earlier],
            value=dim.get("given") or NO_PARENT,
        )
        given.param.watch(
            lambda e: self._act(self.set_given, name, None if e.new == NO_PARENT else e.new),
            "value",
        )
        rows = []
        for parent, table in _tables(dim).items():
            inputs = []
            for category, share in table.items():
                box = pn.widgets.FloatInput(
                    label=category,
                    value=share,
                    step=0.01,
                    start=0.0,
                    end=1.0,
                    width=140,
                    description=DIMENSION["shares"].description,
                )
                box.param.watch(
                    lambda e, c=category, p=parent: self._act(
                        self.set_share, name, c, e.new, p or None
                    ),
                    "value",
                )
                boxes[(name, parent, category)] = box
                inputs.append(box)
            if parent:
                heading = f"**{md(dim['given'])} = {md(parent)}**"
                rows.append(pn.pane.Markdown(heading, margin=(0, 5)))
            rows.append(pn.FlexBox(*inputs))
        new_category = pn.widgets.TextInput(label="New category", width=200)
        add = pn.widgets.Button(label="Add category", variant="outline")
        add.on_click(lambda _: self._act(self.add_category, name, new_category.value))
        drop = pn.widgets.Select(label="Category", options=_categories(dim), width=200)
        remove = pn.widgets.Button(label="Remove category", variant="outline")
        remove.on_click(lambda _: self._act(self.remove_category, name, drop.value))
        normalize = pn.widgets.Button(label="Normalize", variant="outline")
        normalize.on_click(lambda _: self._act(self.normalize, name))
        remove_dim = pn.widgets.Button(label="Remove dimension", color="danger", variant="outline")
        remove_dim.on_click(lambda _: self._act(self.remove_dimension, name))
        return pn.Card(
            given,
            *rows,
            pn.Row(new_category, add, drop, remove, align="end"),
            pn.Row(normalize, remove_dim),
            title=html_text(name),
            sizing_mode="stretch_width",
        )


class _Cards:
    """The dimension cards of one editor view. A change of shares only sets the numbers in
    the inputs already drawn; the cards are drawn again only when the dimensions, their
    categories or their `given` change. (Drawing them again on every share would replace the
    input a person is typing into, losing what they type next.)"""

    def __init__(self, editor: PopulationEditor) -> None:
        self.editor = editor
        self.column = pn.Column(sizing_mode="stretch_width")
        self.boxes: dict[tuple[str, str, str], Any] = {}
        self.shape: Any = None
        self.draw(editor.dimensions)
        editor.param.watch(lambda e: self.draw(e.new), "dimensions")

    def draw(self, dimensions: list[dict[str, Any]]) -> None:
        shape = [
            (d["name"], d.get("given"), [(p, list(t)) for p, t in _tables(d).items()])
            for d in dimensions
        ]
        if shape == self.shape:
            for dim in dimensions:
                for parent, table in _tables(dim).items():
                    for category, share in table.items():
                        box = self.boxes[(dim["name"], parent, category)]
                        if box.value != share:
                            box.value = share  # its watcher sets the share it already has
            return
        self.shape, self.boxes = shape, {}
        names = [d["name"] for d in dimensions]
        self.column.objects = [
            self.editor._dimension_card(dim, names[:i], self.boxes)
            for i, dim in enumerate(dimensions)
        ]


def _messages(message: str, notes: list[str]) -> pn.viewable.Viewable:
    """The validation message and share notes, or a line saying the spec is valid."""
    if not message and not notes:
        return notice("The spec is valid.", "success")
    lines = [f"- {md(note)}" for note in notes] + ([f"**{md(message)}**"] if message else [])
    return notice("\n".join(lines), "danger")


def _action_note(message: str) -> pn.viewable.Viewable:
    return pn.pane.Markdown(md(message), visible=bool(message))


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


def _tables(dim: dict[str, Any]) -> dict[str, Table]:
    """A dimension's share tables by parent category ('' for an unconditional dimension)."""
    if dim.get("given") is None:
        return {"": dim["shares"]}
    return dim["shares"]


def _categories(dim: dict[str, Any]) -> list[str]:
    seen: dict[str, None] = {}
    for table in _tables(dim).values():
        seen.update(dict.fromkeys(table))
    return list(seen)


def _where(dim: dict[str, Any], parent: str) -> str:
    suffix = f" given {dim['given']}={parent!r}" if parent else ""
    return f"dimension {dim['name']!r}{suffix}"


SHARE_DIGITS = 12
"""Decimals a computed share keeps: 0.4 * 0.2 / 0.8 is 0.1, not 0.09999999999999999 in the
share's input box; the shares still sum to 1 within 1e-11."""


def _tidy(share: float) -> float:
    """A computed share rounded to SHARE_DIGITS decimals."""
    return round(share, SHARE_DIGITS)


def _rescale_others(table: Table, category: str, share: float) -> None:
    """Set `category` to `share` and scale the other shares so the table sums to 1."""
    others = [c for c in table if c != category]
    if not others:
        table[category] = 1.0
        return
    rest = 1.0 - share
    total = sum(table[c] for c in others)
    for c in others:
        table[c] = _tidy(rest * table[c] / total if total > 0 else rest / len(others))
    table[category] = share
