"""Write one benchmark's section into bench/RESULTS.md, leaving the other sections alone.

A section is ``<!-- Name:start -->`` ... ``<!-- Name:end -->``; its first line under the
heading says when, at which commit and on what machine it was measured. Modules register their
sections in ``bench/_registry.py`` (``python -m bench all`` reruns them all).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
_HEADER = (
    "# Benchmark results\n\n"
    "Written by the modules in `bench/` (`python -m bench all` reruns every one, `python -m\n"
    "bench NAME` one); each section is replaced when its benchmark runs again and says when, at\n"
    "which commit and on what machine it was measured. Every number compares against a baseline\n"
    "measured in the same run.\n"
)
_SECTION = re.compile(
    r"<!-- (?P<name>[^>]+?):start -->\n(?P<body>.*?)<!-- (?P=name):end -->\n", re.S
)
STAMP = re.compile(r"^_Measured (?P<stamp>.+?)\._$", re.M)


def sections(text: str | None = None) -> dict[str, str]:
    """Every section of RESULTS.md (or of ``text``): name -> its markdown."""
    if text is None:
        text = RESULTS.read_text() if RESULTS.exists() else ""
    return {m["name"]: m["body"] for m in _SECTION.finditer(text)}


def section_stamps() -> dict[str, str | None]:
    """Each section's "measured" line (None when it has none)."""
    out: dict[str, str | None] = {}
    for name, body in sections().items():
        found = STAMP.search(body)
        out[name] = found["stamp"] if found else None
    return out


def write_section(name: str, body: str) -> None:
    """Replace (or append) the section called ``name`` with ``body`` (markdown)."""
    text = RESULTS.read_text() if RESULTS.exists() else _HEADER
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    block = (
        f"<!-- {name}:start -->\n## {name}\n\n"
        f"_Measured {stamp} at {_commit()} on {machine()}._\n\n"
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


def machine() -> str:
    """ "2 cores (Intel(R) Xeon(R) Processor), 23.5 GiB, Linux x86_64, Python 3.11.7"."""
    model = platform.processor() or platform.machine()
    memory = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f", {int(line.split()[1]) / 2**20:.1f} GiB"
                break
    except OSError:  # not Linux: the platform module's words will do
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"{cores} cores ({model}){memory}, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}"
    )


def _commit() -> str:
    """The commit measured, and whether the checkout had changes on top of it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=RESULTS.parent, capture_output=True, text=True, check=False
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "an unknown commit"
    # Changes to RESULTS.md itself are the benches' own output, not changes to what they measure.
    dirty = git(
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ":(top)",
        ":(top,exclude)bench/RESULTS.md",
    )
    return f"commit {commit}" + (" with local changes" if dirty else "")
