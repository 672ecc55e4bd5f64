"""A watched browser page: its console messages and page errors kept, with helpers to open a
Panel page (its document comes over a websocket), wait for text and take screenshots."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from playwright.sync_api import Locator, Page
from served import REPO

SCREENSHOTS = (
    Path(os.environ.get("WORKBENCH_ARTIFACTS", REPO / "tests" / "artifacts")) / "screenshots"
)
OPEN = "Websocket connection 0 is now open"
"""What bokeh logs in the console once the page's document arrives over the websocket."""
RENDER_TIMEOUT_MS = 120_000
"""How long a page may take to arrive and render (a busy 2-core machine)."""
ACTION_TIMEOUT_MS = 30_000
"""How long a click or a fill may wait for its element."""


DEEP_TEXT = """e => {
  const walk = n => (n.shadowRoot ? walk(n.shadowRoot) : "") + [...n.childNodes]
    .map(c => c.nodeType === 3 ? c.textContent
      : (c.nodeType === 1 && !["STYLE", "SCRIPT"].includes(c.tagName) ? walk(c) : ""))
    .join(" ");
  return walk(e);
}"""


def deep_text(locator: Locator) -> str:
    """The text of the first element `locator` finds, shadow roots included (a bokeh model's
    content lives in its shadow root, which `inner_text` leaves out), spaces collapsed."""
    return " ".join(str(locator.first.evaluate(DEEP_TEXT)).split())


TALLEST = """() => {
  let best = 0;
  const walk = root => {
    for (const e of root.querySelectorAll("*")) {
      best = Math.max(best, e.scrollHeight);
      if (e.shadowRoot) walk(e.shadowRoot);
    }
  };
  walk(document);
  return best;
}"""
"""The height of the page's tallest scrolling content (the page shell's main area), shadow
roots included."""


TRAFFIC = """(() => {
  const traffic = window.__wbTraffic = {last: performance.now(), busy: false};
  const received = data => {
    if (typeof data !== "string") { traffic.last = performance.now(); return; }  // buffers
    let message;
    try { message = JSON.parse(data); } catch (e) { traffic.last = performance.now(); return; }
    if (!message || !Array.isArray(message.events)) return;  // a header or metadata frame
    const busy = message.events.filter(e => e.attr === "busy");
    if (busy.length) traffic.busy = busy[busy.length - 1].new;
    if (busy.length < message.events.length) traffic.last = performance.now();
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", e => received(e.data));
    }
    send(data) { traffic.last = performance.now(); return super.send(data); }
  };
})();"""
"""An init script that notes the time of the last websocket message, sent or received, that
changes the page, and Panel's busy flag: the page's own polling (a periodic callback turning
`busy` on and off every second) is no change of the page."""

IDLE = """quiet => {
  const traffic = window.__wbTraffic;
  if (!traffic || traffic.busy || performance.now() - traffic.last < quiet) return false;
  const docs = window.Bokeh ? window.Bokeh.documents : [];
  if (!docs.length || !docs.every(d => d.is_idle)) return false;
  const busy = root => {
    for (const e of root.querySelectorAll("*")) {
      if (e.classList.contains("pn-loading")) return true;
      if (e.shadowRoot && busy(e.shadowRoot)) return true;
    }
    return false;
  };
  return !busy(document);
}"""
"""Whether the page is idle: Panel not busy, no websocket message changing the page for
`quiet` ms, every Bokeh document idle (its views built) and no Panel loading spinner anywhere,
shadow roots included."""


class Watched:
    """A page whose console messages and page errors are kept, with helpers to open a Panel
    page, wait for text and take screenshots."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.messages: list[tuple[str, str]] = []
        page.on("console", lambda m: self.messages.append((m.type, m.text)))
        page.on("pageerror", lambda e: self.messages.append(("pageerror", str(e))))
        page.on(
            "requestfailed",
            lambda r: self.messages.append(("requestfailed", f"{r.url} ({r.failure})")),
        )
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        page.add_init_script(TRAFFIC)

    def _navigate(self, go: Callable[[], object]) -> None:
        """Navigate with `go`. The old page's requests still in flight (a font, a stylesheet)
        are aborted by the navigation itself (net::ERR_ABORTED): no error of either page, so
        those are dropped; any other failure stays."""
        start = len(self.messages)
        go()
        self.messages[start:] = [
            (kind, text)
            for kind, text in self.messages[start:]
            if not (kind == "requestfailed" and "net::ERR_ABORTED" in text)
        ]

    def open(self, url: str) -> None:
        """Go to `url` and wait until its document has come over the websocket."""
        start = len(self.messages)
        self._navigate(
            lambda: self.page.goto(url, timeout=RENDER_TIMEOUT_MS, wait_until="domcontentloaded")
        )
        deadline = time.monotonic() + RENDER_TIMEOUT_MS / 1000
        while not any(OPEN in text for _, text in self.messages[start:]):
            assert time.monotonic() < deadline, f"{url}: no websocket; console: {self.messages}"
            self.page.wait_for_timeout(200)

    def reload(self) -> None:
        """Reload the page (requests the navigation aborts are dropped, as in `open`)."""
        self._navigate(
            lambda: self.page.reload(timeout=RENDER_TIMEOUT_MS, wait_until="domcontentloaded")
        )

    def errors(self) -> list[tuple[str, str]]:
        """The console errors and page errors so far."""
        return [
            (kind, text)
            for kind, text in self.messages
            if kind in ("error", "pageerror", "requestfailed")
        ]

    def assert_no_errors(self) -> None:
        """No console error and no page error so far."""
        assert self.errors() == [], self.errors()

    def shot(self, name: str) -> Path:
        """A screenshot of the whole page saved as a test artifact. The page shell scrolls
        inside its own main area, so the window is made as tall as that content first."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        size = self.page.viewport_size or {"width": 1400, "height": 1000}
        tall = self.page.evaluate(TALLEST)
        self.page.set_viewport_size({"width": size["width"], "height": min(max(tall, 600), 6000)})
        self.page.wait_for_timeout(500)
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(size)
        return path

    def until(
        self,
        check: Callable[[], bool],
        what: str,
        timeout_ms: float = ACTION_TIMEOUT_MS,
        shown: Callable[[], object] | None = None,
    ) -> None:
        """Poll `check` (which reads the page) until it holds; AssertionError naming `what`
        and, when given, what `shown()` reads in the page then (CI keeps only the log)."""
        deadline = time.monotonic() + timeout_ms / 1000
        while not check():
            if time.monotonic() >= deadline:
                seen = f"; the page shows {shown()!r}" if shown is not None else ""
                raise AssertionError(f"timed out waiting for {what}{seen}")
            self.page.wait_for_timeout(200)

    def checkbox(self, label: str) -> Locator:
        """The checkbox labelled `label` (bokeh's label is a sibling of the input inside the
        widget's shadow root, which no locator reaches from the label)."""
        boxes = self.page.get_by_role("checkbox")
        for i in range(boxes.count()):
            box = boxes.nth(i)
            if box.evaluate("e => e.nextElementSibling?.textContent") == label:
                return box
        raise AssertionError(f"no checkbox labelled {label!r}")

    def check(self, label: str) -> None:
        """Tick the checkbox labelled `label`."""
        self.checkbox(label).check()

    def wait_idle(self, quiet_ms: float = 1500, timeout_ms: float = RENDER_TIMEOUT_MS) -> float:
        """Wait until the page is idle (see IDLE): nothing more comes or goes over the
        websocket for `quiet_ms`, every view is built, no spinner; the seconds it took."""
        start = time.monotonic()
        self.until(lambda: bool(self.page.evaluate(IDLE, quiet_ms)), "the page to settle",
                   timeout_ms)  # fmt: skip
        return time.monotonic() - start

    def wait_text(self, text: str, timeout_ms: float = RENDER_TIMEOUT_MS) -> None:
        """Wait until `text` is visible somewhere on the page."""
        self.page.get_by_text(text).first.wait_for(state="visible", timeout=timeout_ms)


def our_browsers() -> list[psutil.Process]:
    """The chromium processes below this test process (Playwright's driver started them, so
    they are ours)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name().startswith("chrom"):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def browsers_memory() -> int:
    """The resident bytes of our chromium processes together (shared pages counted in each: an
    upper bound)."""
    total = 0
    for process in our_browsers():
        try:
            total += process.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def kill_our_browsers() -> int:
    """Kill our chromium processes (see `our_browsers`); how many were killed."""
    killed = 0
    for process in our_browsers():
        try:
            process.kill()
            killed += 1
        except psutil.NoSuchProcess:
            pass
    return killed
