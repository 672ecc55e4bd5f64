"""Browser tests: Playwright driving Debian's chromium against servers the tests start.

`bash .ci/setup` installs chromium with apt (`playwright install` cannot download here). Each
page collects its console messages and page errors; a test ends by asserting there were no
errors. Screenshots go to `tests/artifacts/screenshots/` (or $WORKBENCH_ARTIFACTS/screenshots), the
test artifacts the README's pictures come from.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from browser_pages import Watched, browsers_memory, kill_our_browsers
from playwright.sync_api import Browser, Page, sync_playwright
from ports import free_port
from served import Served, start_dashboard_process

CHROMIUM = Path(os.environ.get("WORKBENCH_CHROMIUM", "/usr/bin/chromium"))

TEST_LIMIT_S = 600.0
"""How long one browser test may run before its browser is killed. A Playwright call such as
`page.evaluate` has no timeout of its own: a page whose script never returns would hold the
whole run until CI's limit. The slowest test here takes about 3 minutes."""

MEMORY_LIMIT = 6 * 2**30
"""The most resident memory our chromium processes may hold together before they are killed:
a page script that loops while it allocates would otherwise take the machine's memory, and
every test after it (normal use here is about 1 GiB)."""


@pytest.fixture(autouse=True)
def browser_watchdog() -> Iterator[None]:
    """Past TEST_LIMIT_S or MEMORY_LIMIT, kill this session's chromium processes (proven ours:
    they descend from this process), so the hung call fails and the run goes on; the test then
    fails saying why."""
    done = threading.Event()
    why: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + TEST_LIMIT_S
        while not done.wait(2.0):
            held = browsers_memory()
            if time.monotonic() > deadline:
                why.append(f"the test ran past {TEST_LIMIT_S:.0f} s")
            elif held > MEMORY_LIMIT:
                why.append(f"chromium held {held / 2**30:.1f} GiB")
            else:
                continue
            kill_our_browsers()
            return

    watcher = threading.Thread(target=watch, name="browser-watchdog", daemon=True)
    watcher.start()
    yield
    done.set()
    watcher.join()
    if why:
        pytest.fail(f"{why[0]}: its browser was killed")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's chromium (it needs --no-sandbox as root), driven by Playwright for one test
    module. Playwright's sync API runs an event loop on the main thread while it lives, so it
    is stopped when the module ends: the tests after it call `asyncio.run`. (pytest-playwright
    keeps one for the whole session; `-p no:playwright` in pyproject turns it off.)"""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install it with `apt-get install -y chromium`")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=["--no-sandbox"]
            )
            yield browser
            browser.close()
    finally:
        # Between its calls the sync API marks its loop as running on this thread; a stop cut
        # short (a killed browser) could leave it marked, and every later `asyncio.run` and
        # browser module of the session would fail on it.
        if asyncio._get_running_loop() is not None:
            asyncio._set_running_loop(None)


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context and page per test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """Keep each phase's report on the test item, so `watched` can tell a failed test."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def watched(page: Page, request: pytest.FixtureRequest) -> Iterator[Watched]:
    """The test's page, watched; a failed test leaves a screenshot of the page as it was."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    watched = Watched(page)
    yield watched
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        watched.shot(f"failed-{request.node.name}")


@pytest.fixture(scope="module")
def start_dashboard(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Served]]:
    """Start `workbench dashboard` on a free port over a results folder (any extra options;
    `fresh=False`: pages start from the state kept there); its `url` carries the token it
    printed. Every dashboard started is stopped when the
    module's tests are done."""
    started: list[Served] = []

    def start(results: Path | None = None, *options: str, fresh: bool = True) -> Served:
        home = tmp_path_factory.mktemp("dashboard")
        results = results or home / "results"
        served = start_dashboard_process(results, home, free_port(), *options, fresh=fresh)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()
