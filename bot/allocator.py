"""glibc malloc settings for the long-running bot (``chanctx run``), set from inside the process.

The bot holds up to a million small objects (messages, index postings) written from several
threads: uvicorn's loop, the request threads Bolt's dispatch runs on, the answer workers. glibc
gives each thread that allocates an arena of its own (up to eight per core), and every arena
keeps the holes its freed blocks leave: request bodies, parsed events and search temporaries
freed between long-lived messages. Two arenas serve a handful of busy threads without
contention and keep those holes in two places instead of a dozen. After an answer (the index
refresh and the search free their temporaries) ``malloc_trim`` hands whole free pages back to
the system.

What an operator sets wins: with ``MALLOC_ARENA_MAX`` in the environment, glibc has read it and
it is left alone. Elsewhere (not glibc: musl, macOS) nothing is changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
import time

__all__ = ["ARENAS", "Trimmer", "limit_arenas"]

logger = logging.getLogger("chanctx.allocator")

ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not all(hasattr(libc, name) for name in ("mallopt", "malloc_trim", "gnu_get_libc_version")):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas (before the threads start); False if not glibc or the
    environment already decides."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    libc = _glibc()
    if libc is None:
        return False
    done = bool(libc.mallopt(_M_ARENA_MAX, arenas))
    logger.debug("malloc arenas capped at %d: %s", arenas, done)
    return done


class Trimmer:
    """``malloc_trim(0)`` at most once per ``interval`` seconds, from whichever thread asks
    (after an answer): returning freed pages costs a walk of the heap, some milliseconds per
    gigabyte, so a burst of answers trims once."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._libc = _glibc()
        self._lock = threading.Lock()
        self._last = float("-inf")
        self.trims = 0

    def __call__(self) -> bool:
        if self._libc is None:
            return False
        now = time.monotonic()
        with self._lock:
            if now - self._last < self.interval:
                return False
            self._last = now
        self._libc.malloc_trim(0)
        self.trims += 1
        return True
