"""A guard in the page for BokehJS measuring a plot before its layout exists.

A material page shell lays out its children itself: when its size changes it measures every
plot below it (`compute_layout`). A plot drawn a moment before (the Results tab's histogram,
just opened) may not have built its layout yet, and BokehJS's `PlotView._measure_layout` reads
`this.layout.top_panel` unguarded: "Cannot read properties of undefined (reading 'top_panel')"
(panel-material-ui issue #548). Thrown inside the shell's React rendering, that error
unmounts the whole tree and leaves the page blank under its title bar.

`LayoutGuard` is an invisible component whose script makes that measure build the plot's
layout first, as BokehJS's own `invalidate_layout` does (`update_layout`, then measure). It
patches the class once per page, whatever the number of guards. The served page shell carries
one (`WorkbenchApp.page`); inline in a notebook the components sit in Panel's own tabs, which
BokehJS lays out itself, and carry none.
"""

from __future__ import annotations

from panel.custom import JSComponent

__all__ = ["GUARD_FLAG", "LayoutGuard"]

GUARD_FLAG = "__workbenchLayoutGuard"
"""Set on BokehJS's PlotView prototype once patched (browser tests read it)."""

_ESM = """
export function render() {
  const plots = window.Bokeh && window.Bokeh.require
    ? window.Bokeh.require("models/plots/plot_canvas") : null;
  const proto = plots && plots.PlotView ? plots.PlotView.prototype : null;
  if (proto && !proto.FLAG) {
    const measure = proto._measure_layout;
    proto._measure_layout = function () {
      if (this.layout == null) {
        this.update_layout();  // what invalidate_layout does before it measures
      }
      return measure.call(this);
    };
    proto.FLAG = true;
  }
  const span = document.createElement("span");
  span.style.display = "none";
  return span;
}
""".replace("FLAG", GUARD_FLAG)


class LayoutGuard(JSComponent):
    """An invisible element whose script guards BokehJS plot measuring (see the module)."""

    _esm = _ESM

    def __init__(self, **params: object) -> None:
        params.setdefault("width", 0)
        params.setdefault("height", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
