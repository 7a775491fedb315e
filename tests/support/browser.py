"""A real headless Chromium for the `browser` tests: Debian's /usr/bin/chromium
(scripts/install-browser.sh) driven by Playwright (the web extra), never a browser of
Playwright's own (its downloads fail offline). A fresh profile per test; no network of
its own (no sync, updates or background requests that would blur what a page asked for).
Without either, the test is skipped with the reason."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",  # root in CI and here
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 120_000  # generous: the machine's cores may be busy


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).is_file() or shutil.which(CHROMIUM) is None:
        return f"no {CHROMIUM}: bash scripts/install-browser.sh (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed: pip install 'agent-workbench[web]'"
    return None


@contextmanager
def chromium_page(profile: Path, width: int = 1280, height: int = 800) -> Iterator[Page]:
    """A page of a headless Chromium started on a fresh profile in `profile`."""
    missing = browser_missing()
    if missing is not None:
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": width, "height": height},
        )
        context.set_default_timeout(WAIT_MS)
        try:
            yield context.pages[0] if context.pages else context.new_page()
        finally:
            context.close()
