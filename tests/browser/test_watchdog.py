"""The browser tests' watchdog: a page whose script never returns holds `page.evaluate` for
ever (Playwright gives it no timeout); killing the session's chromium ends the call with an
error, so one hung page fails its test instead of holding the whole run."""

from __future__ import annotations

import threading
import time

import pytest
from browser_pages import kill_our_browsers
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page

pytestmark = pytest.mark.slow


def test_a_hung_page_is_ended_by_killing_our_browser(page: Page) -> None:
    page.set_content("<p>hangs</p>")
    killed: list[int] = []
    timer = threading.Timer(3.0, lambda: killed.append(kill_our_browsers()))
    timer.start()
    start = time.monotonic()
    with pytest.raises(PlaywrightError):
        page.evaluate("() => { for (;;) {} }")
    timer.join()
    assert killed and killed[0] >= 1
    assert time.monotonic() - start < 60
