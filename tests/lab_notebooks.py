"""Drive a notebook in a real JupyterLab page with no network: open it on a fresh workspace,
Run All on a fresh kernel, wait for every cell, and read what Bokeh drew.

The page's every request to a host other than 127.0.0.1 is aborted and kept (`Offline`), as
on an air-gapped cluster; plots are read through BokehJS itself (`PLOTS`): each plot model
of every Bokeh document in the page, and whether its view has a canvas with pixels.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx
from browser_pages import ACTION_TIMEOUT_MS, RENDER_TIMEOUT_MS, Watched
from playwright.sync_api import Page, Route

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})


@dataclass
class Offline:
    """Aborts every request of a page to a host outside this machine, and keeps its URL."""

    attempted: list[str] = field(default_factory=list)

    def __call__(self, route: Route) -> None:
        host = urlsplit(route.request.url).hostname or ""
        if route.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
            route.continue_()
        else:
            self.attempted.append(route.request.url)
            route.abort("internetdisconnected")

    def install(self, page: Page) -> None:
        page.route("**/*", self)


PLOTS = """scroll => {
  const views = [];
  const walk = view => {
    views.push(view);
    for (const child of (view.child_views ?? [])) walk(child);
    if (view.renderer_views) for (const r of view.renderer_views.values()) walk(r);
  };
  for (const root of (window.Bokeh?.index ? Object.values(window.Bokeh.index) : [])) walk(root);
  const out = [];
  for (const doc of (window.Bokeh?.documents ?? [])) {
    for (const model of doc.all_models) {
      if (!(model.type === "Figure" || model.type === "Plot")) continue;
      const view = views.find(v => v.model === model);
      const canvas = view?.canvas_view?.primary?.canvas ?? null;
      const plot = {title: model.title?.text ?? "", viewed: !!view, width: 0, height: 0,
                    inked: 0, colours: 0,
                    shown: !!view && view.el.isConnected && view.el.getClientRects().length > 0};
      if (canvas && canvas.width && canvas.height) {
        if (out.length === scroll) canvas.scrollIntoView({block: "center"});
        plot.width = canvas.width; plot.height = canvas.height;
        const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
        const seen = new Set();
        for (let i = 0; i < pixels.data.length; i += 4) {
          const [r, g, b, a] = pixels.data.slice(i, i + 4);
          if (a === 0 || (r > 250 && g > 250 && b > 250)) continue;
          plot.inked += 1;
          if (seen.size < 64) seen.add((r << 16) | (g << 8) | b);
        }
        plot.colours = seen.size;
      }
      out.push(plot);
    }
  }
  return out;
}"""
"""Every plot model (Figure or Plot) of every Bokeh document in the page: whether a view of it
exists and is shown (not in a closed tab), its canvas's size, how many of its pixels are inked
(neither clear nor white) and in how many colours (up to 64). The plot numbered `scroll` is
scrolled into view."""

DRAWN_COLOURS = 3
"""A drawn plot has more colours than a frame: axes and text, and its glyphs."""


def drawn(plot: dict[str, object]) -> bool:
    """Whether BokehJS drew the plot: it has a view, its canvas a size, and colour on it."""
    return bool(plot["viewed"]) and int(str(plot["colours"])) >= DRAWN_COLOURS


def kernel_ready(lab_url: str, token: str, path: str) -> bool:
    """Whether the Jupyter server has an idle kernel session for the notebook at `path`."""
    sessions = httpx.get(f"{lab_url}/api/sessions", params={"token": token}, timeout=10).json()
    return any(s["path"] == path and s["kernel"]["execution_state"] == "idle" for s in sessions)


def run_all(
    watched: Watched, lab_url: str, token: str, path: str, code_cells: int, timeout_s: float
) -> float:
    """Open the notebook at `path` on a reset workspace, wait for its kernel, Run All, and wait
    until its `code_cells` cells all carry an execution count; the seconds the run took."""
    page = watched.page
    url = f"{lab_url}/lab/tree/{path}?token={token}&reset"
    page.goto(url, timeout=RENDER_TIMEOUT_MS, wait_until="domcontentloaded")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    choose = page.locator(".jp-Dialog").filter(has_text="Select Kernel")

    def ready() -> bool:
        if choose.count():  # as a person does: keep the notebook's own kernel (Python 3)
            choose.locator(".jp-mod-accept").click()
        return kernel_ready(lab_url, token, path)

    watched.until(ready, f"{path}'s kernel", RENDER_TIMEOUT_MS)
    start = time.monotonic()
    page.locator('.lm-MenuBar-itemLabel:text-is("Run")').click()
    page.locator('li[data-command="runmenu:run-all"]').click()
    prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt")

    def shown() -> list[str]:  # textContent: cells scrolled out of view render no innerText
        return [str(t).strip() for t in prompts.evaluate_all("es => es.map(e => e.textContent)")]

    started = lambda: any(t not in ("", "[ ]:") for t in shown())  # noqa: E731
    watched.until(started, f"Run All to start {path}", ACTION_TIMEOUT_MS)

    def done() -> bool:
        texts = shown()
        counted = [t for t in texts if re.fullmatch(r"\[\d+\]:", t)]
        return len(texts) == code_cells and len(counted) == code_cells

    def finished() -> bool:
        failed = cell_errors(page)
        assert not failed, f"{path}: a cell failed:\n{failed[0]}"
        return done()

    watched.until(finished, f"all {code_cells} cells of {path} to run", timeout_s * 1000,
                  shown=shown)  # fmt: skip
    return time.monotonic() - start


def dismiss_news(page: Page) -> None:
    """Answer JupyterLab's question about its news (it covers the notebook's corner): no."""
    news = page.locator(".Toastify__toast").filter(has_text="Jupyter news")
    if news.count():
        news.get_by_role("button", name="No", exact=True).click()
        page.wait_for_timeout(600)  # it slides out


def cell_errors(page: Page) -> list[str]:
    """The tracebacks among the notebook's outputs (JupyterLab shows an error as stderr)."""
    stderr = page.locator('.jp-Notebook .jp-OutputArea-output[data-mime-type$="stderr"]')
    texts = stderr.evaluate_all("es => es.map(e => e.textContent)")
    return [str(text) for text in texts if "Traceback" in str(text)]
