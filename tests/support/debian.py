"""Debian packages the suite needs (redis-server, chromium): installed when missing, since CI
runs as root on a clean machine; if that fails, the tests that need one fail with the reason,
they are never skipped.

Under pytest-xdist several workers may find the same binary missing at once; dpkg takes one
install at a time, so they queue on a lock file and the later ones find the binary installed."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["ensure_debian_binary"]


def ensure_debian_binary(binary: str, package: str) -> str:
    """The path of ``binary``, installing Debian's ``package`` first when it is missing."""
    found = shutil.which(binary)
    if found:
        return found
    with (Path(tempfile.gettempdir()) / "chanctx-tests-apt.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return shutil.which(binary) or _install(binary, package)


def _install(binary: str, package: str) -> str:
    wait = ["-o", "DPkg::Lock::Timeout=300"]  # another apt on the machine: wait, do not fail
    for command in (
        ["apt-get", "update", "-qq", *wait],
        ["apt-get", "install", "-y", "-qq", *wait, package],
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
