"""The parts of small, bounded HTML views for notebooks (`_repr_html_`): pure functions, escaped.

The views themselves live beside what they draw (`population.population_html`,
`run.run_config_html`, `results.bundle.bundle_html`); here are their cells, tables and titles.

Every value goes through `html.escape`, every text is cut at `MAX_TEXT` characters and every
table at a row budget with a note saying how much was left out, so a spec with thousands of
categories still gives a few kilobytes. Nothing here prints or reads files.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

MAX_TEXT = 80
"""Most characters of one value shown in a cell (longer text ends in an ellipsis)."""

MAX_ROWS = 40
"""Most table rows one repr shows."""

MAX_PER_DIMENSION = 12
"""Most share rows shown for one dimension (the rest are counted in a note)."""

STYLE = "font-size:90%"
LEFT = ' style="text-align:left"'


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """`value` as escaped HTML text, cut at `limit` characters with an ellipsis."""
    raw = str(value)
    if len(raw) > limit:
        raw = raw[: limit - 1] + "\u2026"
    return html.escape(raw)


def share(value: float) -> str:
    """A share as a percentage with up to two decimals (0.1234 -> 12.34%)."""
    return f"{100 * value:.4g}%"


def table(header: Sequence[str], rows: Iterable[Sequence[Any]], note: str = "") -> str:
    """An HTML table of escaped, shortened cells; `note` (plain text) goes under it."""
    head = "".join(f"<th>{text(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{text(c)}</td>" for c in row) + "</tr>" for row in rows)
    out = f'<table style="{STYLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    return out + (f"<div><i>{text(note, 200)}</i></div>" if note else "")


def fields(pairs: Iterable[tuple[str, Any]]) -> str:
    """A two-column table of `name: value` lines (a spec's summary)."""
    body = "".join(
        f"<tr><th{LEFT}>{text(k)}</th><td{LEFT}>{text(v, 160)}</td></tr>" for k, v in pairs
    )
    return f'<table style="{STYLE}"><tbody>{body}</tbody></table>'


def title(kind: str, name: str, detail: str = "") -> str:
    """The bold first line of a repr: `<b>Kind</b> name, detail`."""
    tail = f" <span>{text(detail, 200)}</span>" if detail else ""
    return f"<div><b>{text(kind)}</b> {text(name)}{tail}</div>"


def more(left: int, what: str) -> str:
    """The note under a cut table ("... 488 more categories not shown"), or ""."""
    return f"\u2026 {left:,} more {what} not shown" if left > 0 else ""


def spec_summary(data: dict[str, Any], skip: Sequence[str] = ("kind",)) -> str:
    """`key=value, ...` of a spec's dumped fields, without `skip`."""
    return ", ".join(f"{k}={v}" for k, v in data.items() if k not in skip)
