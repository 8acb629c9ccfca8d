"""Debian's Chromium for the browser tests (installed when missing), driven by Playwright's
Python package with the system browser's executable."""

from __future__ import annotations

from tests.support.debian import ensure_debian_binary

__all__ = ["ensure_chromium"]


def ensure_chromium() -> str:
    return ensure_debian_binary("chromium", "chromium")
