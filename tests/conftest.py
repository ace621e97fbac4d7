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


RAW_MYST = {
    "a glue role": r"\{glue",
    "a citation role": r"\{cite",
    "a cross-reference role": r"\{(numref|ref|doc)\}",
    "an exercise fence": r"\{exercise",
    "a solution fence": r"\{solution",
    "a directive fence": r"(```|:::)\s*\{",
    "LaTeX shown as text": r"\\[a-zA-Z]{2,}",
}
"""What a reader must never see as text on a rendered page (HTML book or Jupyter): MyST that was not
resolved, or LaTeX that was not typeset. Applied to visible text without code blocks and typeset math."""


def raw_myst(text: str) -> list[str]:
    """Each occurrence of raw MyST or LaTeX in ``text``, as 'what: …context…'."""
    import re

    found = []
    for what, pattern in RAW_MYST.items():
        for m in re.finditer(pattern, text):
            found.append(f"{what}: {text[max(0, m.start() - 40):m.end() + 40]!r}")
    return found
