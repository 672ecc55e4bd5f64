"""Layout measured from the elements' boxes: controls that run out of their card or are cut.

Panel draws each component in its own shadow root, so a CSS selector does not see inside; the
script walks the shadow roots itself. `outside(box)` counts the controls (button, input,
select, textarea) below an element and lists each whose box is not inside that element's box,
and each button whose label is cut (its text wider than the button: "Normalize all shares"
shown as "Norm").
"""

from __future__ import annotations

from playwright.sync_api import Locator

SLACK_PX = 1.0
"""Rounding the boxes may differ by (sub-pixel layout)."""

OUTSIDE_JS = """
(host, slack) => {
  const controls = [];
  const walk = node => {
    for (const el of node.querySelectorAll('*')) {
      if (el.matches('button, input, select, textarea')) controls.push(el);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(host.shadowRoot || host);
  if (host.shadowRoot) walk(host);  // light-DOM children a shadow root slots in
  const box = host.getBoundingClientRect();
  const found = [];
  let seen = 0;
  for (const el of new Set(controls)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // hidden
    seen += 1;
    const what = (el.innerText || el.value || el.getAttribute('aria-label') || el.tagName)
      .trim().slice(0, 40);
    if (r.left < box.left - slack || r.right > box.right + slack) {
      found.push(`${what}: x ${Math.round(r.left)}..${Math.round(r.right)} outside `
                 + `${Math.round(box.left)}..${Math.round(box.right)}`);
    } else if (el.tagName === 'BUTTON' && el.scrollWidth > el.clientWidth + slack) {
      found.push(`${what}: label cut (${el.scrollWidth} px in ${el.clientWidth} px)`);
    }
  }
  return {seen, found};
}
"""


def outside(box: Locator) -> tuple[int, list[str]]:
    """How many visible controls `box`'s element holds, and each that runs out of its box or
    has its label cut, in words (an empty list: every control fits)."""
    measured = box.evaluate(OUTSIDE_JS, SLACK_PX)
    return int(measured["seen"]), list(measured["found"])
