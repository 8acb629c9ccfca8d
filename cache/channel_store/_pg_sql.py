"""Statements written once for both backends, spelt for psycopg."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["pyformat"]


@lru_cache(maxsize=512)
def pyformat(query: str) -> str:
    """``query`` with its ``?`` placeholders (SQLite's) spelt as psycopg's ``%s``; the shared
    statements hold no other ``?`` and no ``%``."""
    return query.replace("?", "%s")
