"""A real browser for the console's tests: Debian's chromium, headless, driven by Playwright for Python.

Playwright's own browser download is not reachable here, so it launches the system's chromium by path. The flags
keep chromium off the network it would otherwise try at start (updates, sync, field trials): only the pages a test
opens on 127.0.0.1 are fetched. Screenshots go to one folder per run, kept after it for a person to look at.
"""

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright

CHROMIUM = shutil.which("chromium")
FLAGS = [
    "--no-sandbox",  # CI runs as root, where chromium's own sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(
    os.environ.get("A2A_WRAP_TEST_SCREENSHOTS", Path(__file__).parents[2] / ".test-artifacts" / "console")
)

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium; .ci/run does it as root)"
)


@asynccontextmanager
async def browser_page() -> AsyncIterator[Page]:
    """A fresh headless chromium with one page; closed on exit."""
    assert CHROMIUM is not None
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            context = await browser.new_context(viewport={"width": 1400, "height": 1000})
            yield await context.new_page()
        finally:
            await browser.close()


async def screenshot(page: Page, name: str) -> Path:
    """The whole page as `SCREENSHOTS/name.png`, for a person to look at after the run."""
    path = SCREENSHOTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)  # makes the folder
    assert await asyncio.to_thread(lambda: path.stat().st_size) > 0
    return path
