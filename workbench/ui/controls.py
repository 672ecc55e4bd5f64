"""Controls that read as controls: buttons with a visible edge, rows that wrap.

Under the material page shell an outlined Panel button drew no edge, so "Normalize" or
"Regenerate with a new seed" read as a line of text; `button` draws its edge whatever the
theme. A `pn.Row` of fixed-width controls runs out of a narrow card ("Remove category" past
the card's edge at 1280 px, "Normalize all shares" cut to "Norm" in a JupyterLab panel);
`row` wraps them onto the next line instead.
"""

from __future__ import annotations

from typing import Any

import panel as pn

__all__ = ["BUTTON_CSS", "MIN_WIDTH", "button", "row"]

MIN_WIDTH = 320
"""The least width of a pane sharing a row (the editor beside the preview): below its content's
width, so a wide table scrolls inside its pane instead of pushing the row past the window."""

BUTTON_CSS = """
:host .bk-btn { border-width: 1px !important; border-style: solid !important; font-weight: 500; }
:host .bk-btn-primary, :host .bk-btn-default { border-color: #1565c0 !important; }
:host .bk-btn-danger { border-color: #c62828 !important; }
"""
"""An outlined button's edge (primary blue, danger red), drawn whatever the theme. (A
FileDownload draws as `bk-btn-default` whatever its colour: blue too.)"""


def button(
    label: str, css: str, *, primary: bool = False, danger: bool = False, **params: Any
) -> pn.widgets.Button:
    """An action button that reads as one: outlined with a visible edge (filled for the
    page's primary action), sized to its label; `css` its CSS class (for tests)."""
    return pn.widgets.Button(
        label=label,
        color="danger" if danger else "primary",
        variant="solid" if primary else "outline",
        stylesheets=[BUTTON_CSS],
        css_classes=[css],
        margin=(5, 10),
        **params,
    )


def row(*objects: pn.viewable.Viewable, **params: Any) -> pn.FlexBox:
    """Controls side by side, wrapping onto the next line where there is no room."""
    return pn.FlexBox(
        *objects,
        flex_wrap="wrap",
        align_items="flex-end",
        sizing_mode="stretch_width",
        **params,
    )
