"""Fixtures for the browser tests: Debian's Chromium, a private JupyterLab, a fresh page."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, ViewportSize, sync_playwright

from tests.browser.lab_server import LabServer, start_lab, stop_lab

#: Debian's chromium package; Playwright's own browser downloads are never used.
CHROMIUM = Path("/usr/bin/chromium")

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # CI runs as root
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]

VIEWPORT: ViewportSize = {"width": 1400, "height": 1100}


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium: a failure on CI (which installs it), a skip elsewhere."""
    if CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(
            f"{CHROMIUM} is missing but CI is set: the CI script must run "
            "`apt-get update && apt-get install -y chromium` before pytest",
            pytrace=False,
        )
    pytest.skip("Debian chromium not installed (apt-get install -y chromium)")


@pytest.fixture
def lab(chromium: Path, tmp_path: Path) -> Iterator[LabServer]:
    """JupyterLab on 127.0.0.1, serving temporary copies of ``notebooks/``."""
    server = start_lab(tmp_path / "lab")
    try:
        yield server
    finally:
        stop_lab(server)
        # Shown by pytest only when the test fails.
        print(f"--- JupyterLab log (last 5000 characters) ---\n{server.log()[-5000:]}")


@pytest.fixture
def browser_context(chromium: Path, tmp_path: Path) -> Iterator[BrowserContext]:
    """A Chromium with a new, empty profile."""
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            user_data_dir=tmp_path / "chromium-profile",
            executable_path=chromium,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport=VIEWPORT,
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser_context: BrowserContext) -> Page:
    return browser_context.pages[0] if browser_context.pages else browser_context.new_page()


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    """``$DPFRAME_SCREENSHOT_DIR`` if set, else this test's temporary directory."""
    directory = Path(os.environ.get("DPFRAME_SCREENSHOT_DIR") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory
