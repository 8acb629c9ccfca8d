"""Swapping a JSONL log for a compact copy of what it still means, crash-safely.

Every durable store here is an append-only JSONL file that grows with each fact. When most of
its lines are stale, the store writes what is live to a temporary file beside it, fsyncs it,
renames it over the log and fsyncs the directory, so that after a kill -9 at any instant the
path holds either the whole old log or the whole new one, never a mix or nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["line_of", "rewrite_atomically"]


def line_of(entry: Mapping[str, Any]) -> str:
    """One entry as the stores write it: sorted keys, UTF-8 kept, a newline at the end."""
    return json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n"


def rewrite_atomically(path: Path, entries: Iterable[Mapping[str, Any]]) -> int:
    """Replace ``path`` with ``entries``, one line each; returns the number of lines written.

    The caller closes its append handle first and opens a new one after: the old handle still
    points at the replaced file.
    """
    temporary = path.with_name(path.name + ".tmp")
    lines = 0
    with temporary.open("w", encoding="utf-8") as out:
        for entry in entries:
            out.write(line_of(entry))
            lines += 1
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    # The rename itself lives in the directory: without this a power cut may forget it.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return lines
