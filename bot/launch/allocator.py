"""glibc malloc settings for the long-running bot (``chanctx run``), set from inside the process.

The bot holds up to a million small objects (messages, index postings) written from several
threads: uvicorn's loop, the request threads Bolt's dispatch runs on, the answer workers. glibc
gives each thread that allocates an arena of its own (up to eight per core), and every arena
keeps the holes its freed blocks leave: request bodies, parsed events and search temporaries
freed between long-lived messages. Two arenas serve a handful of busy threads without
contention and keep those holes in two places instead of a dozen.

What an operator sets wins: with ``MALLOC_ARENA_MAX`` in the environment, glibc has read it and
it is left alone. Elsewhere (not glibc: musl, macOS) nothing is changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

__all__ = ["ARENAS", "limit_arenas"]

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
    if not all(hasattr(libc, name) for name in ("mallopt", "gnu_get_libc_version")):
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
