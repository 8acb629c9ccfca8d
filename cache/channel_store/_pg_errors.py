"""What the PostgreSQL store raises when the database cannot take or give data.

``StoreUnavailable`` is an OSError, like :class:`StoreFull`: the database being down, failing
over, refusing connections or past its statement timeout must refuse the events (HTTP 503, no
Socket Mode ack, so Slack delivers them again), never acknowledge them unstored. A write whose
commit was cut off may or may not have landed; its redelivery is harmless, since every write
is idempotent (``_records``).
"""

from __future__ import annotations

import psycopg
from chanctx.cache.channel_store._errors import StoreFull

__all__ = ["DatabaseFull", "StoreUnavailable", "translated"]


class StoreUnavailable(OSError):
    """The PostgreSQL store could not be reached (or timed out): nothing was stored."""

    def __init__(self, where: str, detail: str) -> None:
        super().__init__(f"{where}: the channel store's database is unavailable ({detail})")
        self.where = where


class DatabaseFull(StoreFull):
    """The database's disk (or memory) is full: the batch was not stored."""

    def __init__(self, where: str, detail: str) -> None:
        OSError.__init__(
            self, f"{where}: the channel store's database is full ({detail}); not stored."
        )
        self.where = where


def translated(error: psycopg.Error, where: str) -> Exception:
    """The store's error for a driver error: a full disk is StoreFull, an unreachable or
    timed-out database StoreUnavailable; anything else (a bug, a missing grant) as it is."""
    detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, psycopg.errors.DiskFull | psycopg.errors.OutOfMemory):
        return DatabaseFull(where, detail)
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(where, detail)
    return error
