"""Debian packages the suite needs (redis-server, chromium): installed when missing, since CI
runs as root on a clean machine; if that fails, the tests that need one fail with the reason,
they are never skipped."""

from __future__ import annotations

import shutil
import subprocess

__all__ = ["ensure_debian_binary"]


def ensure_debian_binary(binary: str, package: str) -> str:
    """The path of ``binary``, installing Debian's ``package`` first when it is missing."""
    found = shutil.which(binary)
    if found:
        return found
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", package],
    ):
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"{binary} is missing and `{' '.join(command)}` failed "
                f"(install Debian's {package} package): {result.stderr.strip()[-500:]}"
            )
    found = shutil.which(binary)
    if not found:
        raise RuntimeError(f"{binary} is still missing after installing Debian's {package}")
    return found
