"""Shared by the browser tests (the built book, and JupyterLab in tests/test_binder.py):
Debian's Chromium driven by Playwright, and what counts as a local request."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium (skipped without it, except under CI where that is a failure)."""
    reason = None
    if not os.path.exists(CHROMIUM):
        reason = f"{CHROMIUM} not found (Debian: apt-get install chromium; .ci/run installs it)"
    else:
        try:
            from playwright.sync_api import sync_playwright  # noqa: F401
        except ImportError as exc:  # pragma: no cover - playwright is in the test extra
            reason = f"playwright is not importable ({exc}); pip install -e '.[test]'"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser check cannot run under CI: {reason}", pytrace=False)
        pytest.skip(f"browser check skipped: {reason}")

    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _is_local(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript", "chrome-extension"):
        return True
    return parts.hostname in LOCAL_HOSTS
