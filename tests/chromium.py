"""Debian's Chromium for the browser tests: installed when missing (CI runs as root on a clean
machine), driven by Playwright's Python package with the system browser's executable."""

from __future__ import annotations

import shutil
import subprocess

__all__ = ["ensure_chromium"]


def ensure_chromium() -> str:
    found = shutil.which("chromium")
    if found:
        return found
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "chromium"],
    ):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                "the browser tests need Chromium and could not install it "
                f"(install Debian's chromium package): {result.stderr.strip()[-500:]}"
            )
    found = shutil.which("chromium")
    if found is None:
        raise RuntimeError("chromium is still missing after installing Debian's package")
    return found
