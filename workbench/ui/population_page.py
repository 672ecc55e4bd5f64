"""The PopulationEditor's page: settings, dimension cards, files, and each problem in its place.

`editor_view(editor)` lays the editor out; the editor keeps the state and the edits, this
module only draws them and sends the widgets' edits back (`editor._act`, so an edit's
ConfigError is shown where its widget is, not raised); it knows the editor only as
`EditedPopulation`, so the editor imports its page and not the other way round. Every row of
controls wraps (`controls.row`), so no control runs out of its card at 1280 px or in a
JupyterLab panel of ~900 px, and the action buttons have a visible edge (`controls.button`).
A problem is shown once, at its place: the spec's own at the top, a dimension's in its card,
a refused Agents or Seed under its box.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import panel as pn
import param

from workbench.config import DimensionSpec
from workbench.ui.controls import BUTTON_CSS, MIN_WIDTH, row
from workbench.ui.controls import button as _button
from workbench.ui.notices import notice
from workbench.ui.safe_text import html_text, md
from workbench.ui.share_tables import categories, tables
from workbench.ui.spec_form import spec_field, with_tooltip

__all__ = [
    "DIMENSION",
    "FILES",
    "EditedPopulation",
    "NEW",
    "NO_PARENT",
    "PLAYED",
    "TOP",
    "Problem",
    "button",
    "editor_view",
]

NO_PARENT = "(none)"
"""The `given` choice of an unconditional dimension in the page."""

DIMENSION = {key: spec_field(DimensionSpec, key) for key in ("name", "given", "shares")}
"""DimensionSpec's fields: the dimension cards' labels and tooltips are theirs."""

PLAYED = "the preview shows these agents and the run on the Run tab plays them"
"""What the editor's Agents and Seed are for (their tooltips and the line under them)."""

TOP, NEW, FILES = "", ":new", ":files"
"""Places in the page a problem or an action's outcome is shown: the top (the spec's own
problems), the new-dimension row, the files row; a dimension's are in its card (its name, an
identifier, never starting with ':'); a refused Agents or Seed under its box (':n', ':seed')."""

Problem = tuple[str, str]
"""(place, text): a problem and where the page shows it."""


class EditedPopulation(Protocol):
    """The editor as its page sees it (`PopulationEditor`, which imports this module to draw
    itself): the params the widgets show, the state the cards are drawn from, the edits the
    widgets send and `_act`, which runs an edit and says its ConfigError at a place."""

    param: Any
    dimensions: list[dict[str, Any]]
    action_failed: bool

    def _act(self, action: Callable[..., Any], *args: Any, place: str = TOP) -> None: ...
    def _save_action(self) -> None: ...
    def _download(self) -> io.StringIO: ...
    def load(self, path: str | Path | None = None) -> None: ...
    def type_value(self, name: str, value: Any) -> None: ...
    def add_dimension(
        self, name: str, shares: Mapping[str, float] | None = None, given: str | None = None
    ) -> None: ...
    def remove_dimension(self, name: str) -> None: ...
    def add_category(self, dimension: str, category: str, share: float | None = None) -> None: ...
    def remove_category(self, dimension: str, category: str) -> None: ...
    def set_share(
        self, dimension: str, category: str, share: float, parent: str | None = None
    ) -> None: ...
    def set_given(self, dimension: str, given: str | None) -> None: ...
    def normalize(self, dimension: str | None = None) -> None: ...


def editor_view(editor: EditedPopulation) -> pn.viewable.Viewable:
    """The editor's layout: the spec's problems (or that it is valid) at the top, the settings
    with the run's Agents and Seed, one card per dimension, the files."""
    settings = pn.Column(
        pn.widgets.TextInput.from_param(editor.param.population_name),
        pn.widgets.TextInput.from_param(editor.param.description),
        row(
            run_box(editor, "n", width=160),
            run_box(editor, "seed", width=140),
            pn.widgets.Select.from_param(editor.param.sampling, width=120),
        ),
        placed_view(editor, ":n"),
        placed_view(editor, ":seed"),
        pn.pane.Markdown(f"Agents and Seed: {PLAYED}.", css_classes=["wb-population-played"]),
        pn.widgets.TextInput.from_param(editor.param.persona_template),
        with_tooltip(
            pn.widgets.Checkbox.from_param(editor.param.auto_normalize),
            str(editor.param.auto_normalize.doc),
        ),
        sizing_mode="stretch_width",
    )
    new_dimension = pn.widgets.TextInput(
        label="New dimension",
        placeholder="e.g. occupation",
        description=DIMENSION["name"].description,
        width=200,
    )
    add = button("Add dimension", "add-dimension", primary=True)
    add.on_click(lambda _: _add(editor, editor.add_dimension, new_dimension, place=NEW))
    normalize_all = button("Normalize all shares", "normalize-all")
    normalize_all.on_click(lambda _: editor._act(editor.normalize, place=NEW))
    path = pn.widgets.TextInput.from_param(
        editor.param.path, placeholder="population.yaml", width=200
    )
    load = button("Load", "load")
    load.on_click(lambda _: editor._act(editor.load, place=FILES))
    save = button("Save", "save")
    save.on_click(lambda _: editor._act(editor._save_action, place=FILES))
    download = pn.widgets.FileDownload(
        callback=editor._download,
        filename="population.yaml",
        label="Download YAML",
        color="primary",
        variant="outline",
        stylesheets=[BUTTON_CSS],
        css_classes=["wb-population-download"],
    )
    return pn.Column(
        pn.bind(top_view, editor.param.problems),
        placed_view(editor, TOP, problems=False),
        settings,
        row(new_dimension, add, normalize_all),
        placed_view(editor, NEW),
        Cards(editor).column,
        row(path, load, save, download),
        placed_view(editor, FILES),
        sizing_mode="stretch_width",
        min_width=MIN_WIDTH,
        css_classes=["wb-population-editor"],
    )


def _add(
    editor: EditedPopulation, action: Any, box: pn.widgets.TextInput, *args: Any, place: str
) -> None:
    """Add what `box` names (a dimension, a category) and empty the box once it is added."""
    editor._act(action, *args, box.value, place=place)
    if not editor.action_failed:
        box.value = ""


def run_box(editor: EditedPopulation, name: str, width: int) -> pn.widgets.IntInput:
    """The box of Agents (`n`) or Seed: it sets the param only with a value the run takes
    (`type_value`; no bounds of its own, which would snap -5 back without a word), and
    follows the param when code sets it."""
    box = pn.widgets.IntInput(
        label=editor.param[name].label,
        value=getattr(editor, name),
        description=editor.param[name].doc,
        width=width,
        css_classes=[f"wb-population-{name}"],
    )
    box.param.watch(lambda e: editor.type_value(name, e.new), "value")

    def follow(event: param.parameterized.Event) -> None:
        if box.value != event.new:
            box.value = event.new

    editor.param.watch(follow, name)
    return box


def placed_view(
    editor: EditedPopulation, place: str, problems: bool = True
) -> pn.viewable.Viewable:
    """The problems at `place` (unless `problems` is False) and the last action's outcome
    if it was done there: nothing while there are none."""
    return pn.bind(
        place_notes,
        place,
        editor.param.problems if problems else [],
        editor.param.action_message,
        editor.param.action_place,
        editor.param.action_failed,
    )


def dimension_card(
    editor: EditedPopulation,
    dim: dict[str, Any],
    earlier: list[str],
    boxes: dict[tuple[str, str, str], Any],
) -> pn.Card:
    """A dimension's card: its problems, given, a number per share (kept in `boxes` by
    (dimension, parent, category)), add/remove categories, normalize, remove."""
    name = dim["name"]
    act = editor._act
    given = pn.widgets.Select(
        label=DIMENSION["given"].label,
        description=DIMENSION["given"].description,
        options=[NO_PARENT, *earlier],
        value=dim.get("given") or NO_PARENT,
        width=200,
    )
    given.param.watch(
        lambda e: act(editor.set_given, name, None if e.new == NO_PARENT else e.new, place=name),
        "value",
    )
    rows: list[pn.viewable.Viewable] = []
    for parent, table in tables(dim).items():
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
                lambda e, c=category, p=parent: act(
                    editor.set_share, name, c, e.new, p or None, place=name
                ),
                "value",
            )
            boxes[(name, parent, category)] = box
            inputs.append(box)
        if parent:
            heading = f"**{md(dim['given'])} = {md(parent)}**"
            rows.append(pn.pane.Markdown(heading, margin=(0, 5)))
        rows.append(row(*inputs))
    new_category = pn.widgets.TextInput(label="New category", width=200)
    add = button("Add category", "add-category")
    add.on_click(lambda _: _add(editor, editor.add_category, new_category, name, place=name))
    drop = pn.widgets.Select(label="Category", options=categories(dim), width=200)
    remove = button("Remove category", "remove-category")
    remove.on_click(lambda _: act(editor.remove_category, name, drop.value, place=name))
    normalize = button("Normalize", "normalize")
    normalize.on_click(lambda _: act(editor.normalize, name, place=name))
    remove_dim = button("Remove dimension", "remove-dimension", danger=True)
    remove_dim.on_click(lambda _: act(editor.remove_dimension, name, place=name))
    return pn.Card(
        placed_view(editor, name),
        given,
        *rows,
        row(new_category, add),
        row(drop, remove),
        row(normalize, remove_dim),
        title=html_text(name),
        sizing_mode="stretch_width",
        css_classes=["wb-dimension-card"],
    )


class Cards:
    """The dimension cards of one editor view. A change of shares only sets the numbers in
    the inputs already drawn; the cards are drawn again only when the dimensions, their
    categories or their `given` change. (Drawing them again on every share would replace the
    input a person is typing into, losing what they type next.)"""

    def __init__(self, editor: EditedPopulation) -> None:
        self.editor = editor
        self.column = pn.Column(sizing_mode="stretch_width")
        self.boxes: dict[tuple[str, str, str], Any] = {}
        self.shape: Any = None
        self.draw(editor.dimensions)
        editor.param.watch(lambda e: self.draw(e.new), "dimensions")

    def draw(self, dimensions: list[dict[str, Any]]) -> None:
        shape = [
            (d["name"], d.get("given"), [(p, list(t)) for p, t in tables(d).items()])
            for d in dimensions
        ]
        if shape == self.shape:
            for dim in dimensions:
                for parent, table in tables(dim).items():
                    for category, share in table.items():
                        box = self.boxes[(dim["name"], parent, category)]
                        if box.value != share:
                            box.value = share  # its watcher sets the share it already has
            return
        self.shape, self.boxes = shape, {}
        names = [d["name"] for d in dimensions]
        self.column.objects = [
            dimension_card(self.editor, dim, names[:i], self.boxes)
            for i, dim in enumerate(dimensions)
        ]


def top_view(problems: list[Problem]) -> pn.viewable.Viewable:
    """The top of the editor: the spec's own problems; that it is valid; or, while its
    problems are all beside their fields, a line saying so (each problem is shown once)."""
    if not problems:
        return notice("The spec is valid.", "success", css="wb-population-status")
    top = [text for place, text in problems if place == TOP]
    if top:
        return notice(lines(top), "danger", css="wb-population-status")
    count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
    return notice(
        f"Not valid yet: {count}, each shown beside what it is about below.",
        "warning",
        css="wb-population-status",
    )


def place_notes(
    place: str, problems: list[Problem], action: str, action_place: str, failed: bool
) -> pn.viewable.Viewable:
    """The problems at `place` (not the top's: `top_view` shows those), then the last
    action's outcome if it was done here."""
    texts = [text for where, text in problems if where == place and place != TOP]
    if action and action_place == place and failed:
        texts.append(action)
    if texts:
        return notice(lines(texts), "danger", css="wb-population-problem")
    if action and action_place == place:
        return notice(md(action), "info", css="wb-population-outcome")
    return pn.pane.Markdown("", visible=False)


def lines(texts: list[str]) -> str:
    """Texts as escaped Markdown: one line, or a list."""
    if len(texts) == 1:
        return md(texts[0])
    return "\n".join(f"- {md(text)}" for text in texts)


def button(label: str, css: str, primary: bool = False, danger: bool = False) -> pn.widgets.Button:
    """An editor's action button (`controls.button`), its class `wb-population-<css>`."""
    return _button(label, f"wb-population-{css}", primary=primary, danger=danger)
