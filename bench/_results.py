"""Write one benchmark's section into bench/RESULTS.md, leaving the other sections alone."""

from __future__ import annotations

import platform
import re
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
        f"_Measured {stamp}, Python {platform.python_version()}._\n\n{body.strip()}\n"
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
