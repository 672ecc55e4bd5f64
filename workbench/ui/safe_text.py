"""Text from files, folders, manifests, model servers or the user, made inert for the page.

Panel's Markdown and Alert panes render Markdown with raw HTML allowed (and run the scripts in
it); its HTML and Str panes and a Card's title are HTML: a folder named `<img src=x
onerror=...>` or a manifest error holding `[x](javascript:...)` would become live markup.
Every such text goes through one of two functions before it reaches a pane: `md` for Markdown
and Alert panes (HTML's special characters as entities and Markdown's punctuation
backslash-escaped, so the text reads exactly as it was written and makes no tag, link, image,
emphasis or code span), `html_text` for HTML and Str panes and Card titles (`html.escape`).
Texts the workbench writes itself (headings, bold labels) stay Markdown; only the values put
into them are escaped.

Tables: a Tabulator cell is text (Bokeh's formatters build text nodes), but a column's title
is HTML (Tabulator sets it as innerHTML), and column names come from data (a bundle's parquet
files, a population's dimensions): `TextTable` is a Tabulator whose titles are escaped.
"""

from __future__ import annotations

import html
from typing import Any

import panel as pn

__all__ = ["TextTable", "html_text", "md", "md_lines"]

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}
"""HTML's special characters: written as entities, which Markdown decodes back to text."""

_MARKDOWN_PUNCTUATION = frozenset("!#$()*+-.:=[\\]^_`{|}~")
"""The punctuation that can start Markdown syntax (links, images, emphasis, code, headings,
lists, tables, math, emoji, footnotes), backslash-escaped; HTML's specials are entities
instead (a backslash before `&` would show the entity's own text), and `/ , ; ? @ %` mean
nothing in Markdown, so paths and messages keep their look in the source."""


def md(value: object) -> str:
    """`value` as Markdown that displays exactly its text: no tag, link, image, emphasis, code
    span, heading, list or math can come out of it. For Markdown and Alert panes."""
    out = []
    for char in str(value):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _MARKDOWN_PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def md_lines(value: object) -> str:
    """`md(value)` keeping its line breaks as breaks (a multi-line report or error)."""
    return "  \n".join(md(line) for line in str(value).splitlines())


def html_text(value: object) -> str:
    """`value` as HTML text (`html.escape`, quotes included). For HTML panes and Card titles."""
    return html.escape(str(value), quote=True)


class TextTable(pn.widgets.Tabulator):
    """A Tabulator whose column titles are escaped text (its cells are text already)."""

    def _get_column_definitions(self, col_names: list[str], df: Any) -> list[Any]:
        columns = super()._get_column_definitions(col_names, df)
        for column in columns:
            column.title = html_text(column.title)
        return columns
