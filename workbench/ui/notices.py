"""Messages in the page at WCAG AA contrast: one notice pane for info, warnings and errors.

Panel's Alert pane takes its colours from the theme: under the material page shell the info
alert came out white on pale cyan (about 1.3:1). A notice sets both its text and its ground, so
every level reads at 4.5:1 or more whatever the theme (`CONTRAST` holds the pairs; a browser
test measures the rendered colours). The text is escaped Markdown (`safe_text.md`) by the
caller, as for any pane.
"""

from __future__ import annotations

from typing import Literal

import panel as pn

__all__ = ["LEVELS", "Level", "notice"]

Level = Literal["info", "success", "warning", "danger"]

LEVELS: dict[str, tuple[str, str, str]] = {
    "info": ("#0b3954", "#e1f0fa", "#1565c0"),
    "success": ("#14532d", "#e3f6e8", "#2e7d32"),
    "warning": ("#5c3a00", "#fff4d6", "#b26a00"),
    "danger": ("#7a1212", "#fde8e8", "#c62828"),
}
"""Each level's (text, ground, edge) colours: text on ground is at least 9:1."""


def notice(text: str, level: Level = "info", css: str = "", **params: object) -> pn.pane.Markdown:
    """A Markdown pane showing `text` (already escaped) at `level`, hidden while empty."""
    color, ground, edge = LEVELS[level]
    sheet = (
        f":host {{ background-color: {ground}; border-left: 4px solid {edge}; "
        "border-radius: 4px; padding: 2px 12px; }\n"
        f":host, .markdown, .markdown * {{ color: {color} !important; }}"
    )
    classes = [c for c in (css, "wb-notice", f"wb-notice-{level}") if c]
    return pn.pane.Markdown(
        text or "-",
        visible=bool(text),
        stylesheets=[sheet],
        css_classes=classes,
        sizing_mode="stretch_width",
        **params,
    )
