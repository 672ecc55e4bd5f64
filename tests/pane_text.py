"""What a pane shows and what HTML reaches the browser, read from the Bokeh models Panel builds.

A Markdown, Alert or HTML pane (and a Card's title) becomes a model whose `text` is the HTML the
browser sets as innerHTML; a Tabulator column's title is HTML too. `shown_text` is the text a
person reads in a pane; `markup` lists every (model, HTML) of a layout as it is drawn now, and
`live_markup` the tags or attributes in them that could run script or load anything.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import panel as pn
from bokeh.document import Document
from bokeh.models import Div, TableColumn
from panel.models.markup import HTML as PanelHTML

SAFE_TAGS = frozenset(
    "p div span strong em b i code pre ul ol li br hr h1 h2 h3 h4 h5 h6 table thead tbody tr "
    "th td blockquote del s sup sub".split()
)
"""Tags that carry no script and load nothing (what escaped Markdown renders to)."""

LOADING_ATTRIBUTES = frozenset({"href", "src", "srcdoc", "formaction", "xlink:href"})
"""Attributes that load or link to something (a `javascript:` URL among them)."""


class _Markup(HTMLParser):
    """Collects an HTML fragment's text and its unsafe tags and attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.unsafe: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in SAFE_TAGS:
            self.unsafe.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name in (
                "href",
                "src",
                "srcdoc",
                "formaction",
                "xlink:href",
            ):
                self.unsafe.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(fragment: str) -> _Markup:
    parser = _Markup()
    parser.feed(fragment)
    parser.close()
    return parser


def model_html(model: Any) -> str | None:
    """The HTML a Bokeh model puts in the page as markup (None for a model that draws text):
    Panel's HTML models (Markdown, Alert, HTML panes, Card headers) and table column titles."""
    if isinstance(model, TableColumn):
        return str(model.title or "")
    if isinstance(model, PanelHTML):
        return html.unescape(model.text)  # Panel sends the HTML escaped; the browser unescapes it
    if isinstance(model, Div) and not model.render_as_text:
        return model.text
    return None  # widget titles, options, JSON panes, plots: drawn as text nodes


def markup(layout: Any, doc: Document | None = None) -> Iterator[tuple[Any, str]]:
    """(model, HTML) for every markup model of `layout` as drawn now (its root is built in
    `doc`, or a new document)."""
    root = pn.panel(layout).get_root(doc or Document())
    for model in root.references():
        fragment = model_html(model)
        if fragment is not None:
            yield model, fragment


def live_markup(fragment: str) -> list[str]:
    """The tags and attributes of an HTML fragment that could run script or load anything."""
    return _parse(fragment).unsafe


def text_of(fragment: str) -> str:
    """The text an HTML fragment shows, spaces collapsed."""
    return " ".join("".join(_parse(fragment).text).split())


def shown_text(pane: Any) -> str:
    """The text a Markdown, Alert or HTML pane shows in the browser, spaces collapsed."""
    return " ".join(text_of(fragment) for _, fragment in markup(pane))
