"""What a Claude session needs of its log and of the store that holds the logs: the interface
every backend meets.

A log is append-only: entries are never changed or removed, so a session is rebuilt by reading
them in order, and a backend that several processes share says when another one appended.
"""

from __future__ import annotations

from typing import Protocol

from chanctx.manifest_store._entries import Entry
from chanctx.manifest_store._keys import SessionKey

__all__ = ["AppendLog", "SessionLogs"]


class AppendLog(Protocol):
    """One session's append-only log."""

    def append(self, entry: Entry) -> None: ...
    def entries(self) -> list[Entry]: ...
    def changed_elsewhere(self) -> bool:
        """True if another process appended since this object last read or wrote: a copy of
        the session held in memory is stale and must be rebuilt from ``entries()``."""
        ...


class SessionLogs(Protocol):
    """Every session's log, by key (team, channel, thread)."""

    def open(self, key: SessionKey) -> AppendLog: ...
    def exists(self, key: SessionKey) -> bool: ...
    def forget(self, key: SessionKey) -> bool: ...
    def keys(self) -> list[SessionKey]: ...
