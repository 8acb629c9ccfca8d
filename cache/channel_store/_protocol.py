"""The channel store's interface: what every backend implements (SQLite now, PostgreSQL next).

The store is the record of what every channel said; the in-memory history, thread caches and
search index are caches of it. Writes come in batches (one transaction each: the caller acks
the events after :meth:`ChannelStore.write` returns); reads never wait for writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from chanctx.cache.channel_store._records import (
    BackfillCursor,
    Candidate,
    ChannelKey,
    Scope,
    StoreEvent,
    StoreStats,
    WriteResult,
)
from chanctx.context import FileRef, Message

__all__ = ["ChannelStore"]


class ChannelStore(Protocol):
    # -- writes -------------------------------------------------------------------------------

    def write(self, events: Sequence[StoreEvent]) -> WriteResult:
        """Apply ``events`` atomically and durably (StoreFull: nothing was stored)."""
        ...

    def erase(self) -> bool:
        """Make removed text leave the storage's bytes now; False if it must be retried."""
        ...

    def purge(self, *, now: float | None = None) -> int:
        """Delete what is older than the retention period; how many messages went."""
        ...

    def enforce_size(self, max_bytes: int) -> int:
        """Drop the oldest messages until the store fits ``max_bytes`` (a warning is logged)."""
        ...

    def close(self) -> None: ...

    # -- reads --------------------------------------------------------------------------------

    def get(self, team: str, channel: str, ts: str) -> Message | None: ...

    def messages(
        self,
        team: str,
        channel: str,
        *,
        limit: int | None = None,
        oldest: str | None = None,
        latest: str | None = None,
        scope: Scope = "all",
    ) -> list[Message]: ...

    def get_many(self, team: str, channel: str, ts: Sequence[str]) -> list[Message]: ...

    def replies(self, team: str, channel: str, thread_ts: str) -> list[Message]: ...

    def thread(
        self, team: str, channel: str, thread_ts: str
    ) -> tuple[Message | None, list[Message]]: ...

    def iter_messages(
        self, team: str, channel: str, *, batch: int = 10_000
    ) -> Iterator[list[Message]]: ...

    def search_candidates(
        self,
        team: str,
        channel: str,
        terms: Sequence[str],
        limit: int,
        *,
        before: str | None = None,
    ) -> list[Candidate]:
        """Messages worth ranking for ``terms``, best first, at most ``limit``; with
        ``before``, only messages older than that ts (the caller holds the newer ones: a
        store may spend its reads on the older part, or leave the newer out of its answer)."""
        ...

    def channel_names(self, team: str) -> dict[str, str]: ...

    def user_names(self, team: str) -> dict[str, str]: ...

    def pins(self, team: str, channel: str) -> list[str]: ...

    def file(self, team: str, file_id: str) -> FileRef | None: ...

    def cursor(self, team: str, channel: str, kind: str = "history") -> BackfillCursor | None: ...

    def channels(self, team: str | None = None) -> list[ChannelKey]: ...

    def stats(self) -> StoreStats: ...
