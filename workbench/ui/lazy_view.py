"""A part of a page drawn only while it is shown, and again only when what it shows changed.

Panel's `param.depends` panes draw again on every change of their parameters, shown or not: a
page of tabs computes every hidden tab's plots on each change (nine seconds for a 300k-agent
bundle), and a table replaced in a tab the browser has not drawn breaks Tabulator's JavaScript.
A `LazyView` instead holds a key function (what its content depends on) and an `apply` that
draws it; its owner calls `show()` for the views on screen, which applies only when the key
moved since the last draw: a hidden tab is drawn once when it is opened, and not again for the
same bundle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import panel as pn

__all__ = ["LazyView", "pane_view"]

_NEVER = object()
"""The key of a view never drawn."""


class LazyView:
    """`apply()` run by `show()` when `key()` differs from the key it last ran for."""

    def __init__(self, key: Callable[[], Hashable], apply: Callable[[], None]) -> None:
        self._key, self._apply = key, apply
        self._drawn: Any = _NEVER
        self.draws = 0
        """How many times it was drawn (tests count them)."""

    def show(self) -> bool:
        """Draw when what it shows changed since the last draw; whether it drew."""
        key = self._key()
        if key == self._drawn:
            return False
        self._drawn = key
        self._apply()
        self.draws += 1
        return True

    def forget(self) -> None:
        """Draw on the next `show()` whatever the key (the files under it changed)."""
        self._drawn = _NEVER


def pane_view(key: Callable[[], Hashable], draw: Callable[[], Any]) -> tuple[pn.Column, LazyView]:
    """A column whose one object is `draw()`'s, drawn lazily: (the column, its view)."""
    column = pn.Column(sizing_mode="stretch_width")

    def apply() -> None:
        column.objects = [draw()]

    return column, LazyView(key, apply)


def watch_first(obj: Any, fn: Callable[[Any], None], name: str) -> None:
    """Call `fn(event)` when `obj`'s param `name` changes, before `obj`'s own watchers.

    Tabs draw the tab opened in their own watcher of `active` (Panel's at precedence 0, Panel
    Material UI's at -1); a watcher that fills the opened tab must run before it, so the tab
    reaches the browser once, complete, instead of drawn and then replaced while the browser
    lays it out (Tabulator's JavaScript breaks on that). Param reserves negative precedences
    for its internal watchers and refuses them in `param.watch`, hence its `_watch`.
    """
    obj.param._watch(fn, [name], precedence=-2)
