"""Write one benchmark's section into bench/RESULTS.md, leaving the other sections alone."""

from __future__ import annotations

import platform
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
_HEADER = (
    "# Benchmark results\n\n"
    "Written by the scripts in `bench/` (run `python bench/<name>.py`); each section is replaced\n"
    "when its benchmark runs again. Every number compares against a baseline measured in the same\n"
    "run. Machine: 2 cores, 24 GiB.\n"
)


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section called ``name`` with ``body`` (markdown)."""
    text = RESULTS.read_text() if RESULTS.exists() else _HEADER
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    block = (
        f"<!-- {name}:start -->\n## {name}\n\n"
        f"_Measured {stamp} at {_commit()}, Python {platform.python_version()}._\n\n"
        f"{body.strip()}\n"
        f"<!-- {name}:end -->\n"
    )
    pattern = re.compile(
        rf"<!-- {re.escape(name)}:start -->.*?<!-- {re.escape(name)}:end -->\n", re.S
    )
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else text.rstrip() + "\n\n" + block
    )
    RESULTS.write_text(text)


def _commit() -> str:
    """The commit measured, and whether the checkout had changes on top of it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=RESULTS.parent, capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "an unknown commit"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return f"commit {commit}" + (" with local changes" if dirty else "")
