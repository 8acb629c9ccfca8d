"""ruff and mypy --strict are part of the suite, so the README's one test command checks them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)


def test_ruff_check_is_clean() -> None:
    result = run(str(BIN / "ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean() -> None:
    result = run(str(BIN / "ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    result = run("bash", str(ROOT / ".ci" / "typecheck"))
    assert result.returncode == 0, result.stdout + result.stderr
