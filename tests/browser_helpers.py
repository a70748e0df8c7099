"""Helpers shared by the explorer's browser tests: Debian's Chromium driven by Playwright, a
server of the page on a free port, and ways to read what the page shows.

Test files import them as ``from browser_helpers import ...`` (the fixtures too: pytest finds a
fixture imported into a test module). Importing this module skips the test file when the
``playwright`` package or a Chromium binary is missing. ``FPEMU_CHROMIUM`` names another
Chromium binary; ``FPEMU_SCREENSHOTS`` a folder where the tests leave screenshots.
"""

from __future__ import annotations

import os
import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import fpemu
from fpemu.teach import serve_in_thread

sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need playwright")
CHROMIUM = os.environ.get("FPEMU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"the browser tests need Chromium ({CHROMIUM} is missing: apt-get install chromium)",
                allow_module_level=True)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DESKTOP = {"width": 1100, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def url():
    server, address = serve_in_thread(0)
    yield address
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=60_000)
        except Exception as exc:  # a Chromium that cannot start here (no display libraries, ...)
            pytest.skip(f"Chromium does not start: {str(exc).splitlines()[0]}")
        yield chromium
        chromium.close()


def open_page(browser, url: str, hash_: str = "#format=e4m3", viewport: dict | None = None):
    """A new page at ``url + hash_``, ready; returns (page, problems): the page's errors and
    console errors, which a test asserts empty at its end (an answer 400 is the API refusing
    bad input, which the page shows)."""
    context = browser.new_context(viewport=viewport or DESKTOP)
    page = context.new_page()
    page.set_default_timeout(15_000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("console", lambda msg: problems.append(msg.text)
            if msg.type == "error" and "status of 400" not in msg.text else None)
    page.goto(url + hash_)
    page.wait_for_selector("body[data-ready]")
    return page, problems


@pytest.fixture
def page(browser, url):
    page, problems = open_page(browser, url)
    yield page
    page.context.close()
    assert not problems, problems


def settle(page, action) -> None:
    """Do ``action`` and wait until the page has had the server's answer to the last request
    it made (leaving a field fires that field's own change first: an earlier answer alone
    does not count)."""
    seq = int(page.evaluate("document.body.dataset.seq"))
    action()
    page.wait_for_function(f"Number(document.body.dataset.seq) > {seq} && "
                           "(document.body.dataset.asked || '0') === (document.body.dataset.answered || '0')")


def shot(page, name: str) -> None:
    folder = os.environ.get("FPEMU_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def text(page, selector: str) -> str:
    return page.text_content(selector).strip()


def bits_shown(page) -> str:
    return "".join(page.eval_on_selector_all("button.bit", "bs => bs.map(b => b.textContent)"))


def rules_shown(page) -> list[str]:
    return page.eval_on_selector_all("#out-rules li", "lis => lis.map(li => li.dataset.rule)")


def decoded(code: int, fmt: str) -> str:
    """The value of ``code`` by fpemu.decode, as a float64 prints it (repr)."""
    return repr(float(fpemu.decode(np.array([code]), fmt)[0]))


def exactly(code: int, fmt: str) -> str:
    """The value of ``code`` by fpemu.decode, as its whole decimal (Python's Decimal holds every
    float64 exactly), or inf, -inf, nan."""
    v = float(fpemu.decode(np.array([code]), fmt)[0])
    if not np.isfinite(v):
        return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
    if v.is_integer():
        return f"{int(v)}.0" if v or not np.signbit(v) else "-0.0"
    d = Decimal(v)
    return format(d, "f") if 1e-6 <= abs(v) < 1e21 else f"{format(d, 'e').split('e')[0]}e{int(format(d, 'e').split('e')[1]):+03d}"


def round_number(page, value: str) -> None:
    page.fill("#number", value)
    settle(page, lambda: page.press("#number", "Enter"))
