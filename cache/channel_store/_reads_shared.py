"""The reads both backends answer with the same statements (but for a few spellings).

Each backend supplies :meth:`SharedReads._read`, which runs a statement written here with
``?`` placeholders, and the spellings that differ: how a live row is tested (SQLite keeps
``deleted`` as 0/1, PostgreSQL as a boolean), the timeline's broadcast-flag test and the users
table's user column. The reads whose plans differ (``get_many``, ``thread``, search, stats)
stay with each backend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any

from chanctx.cache import ts_key
from chanctx.cache.channel_store._records import (
    BackfillCursor,
    ChannelKey,
    ChannelStats,
    Scope,
    StoreStats,
)
from chanctx.cache.channel_store._rows import message_from_row
from chanctx.context import FileRef, Message

__all__ = ["COLUMNS", "SharedReads"]

COLUMNS = "ts, thread_ts, user_id, text, reply_count, flags, more"
_SELECT = f"SELECT {COLUMNS} FROM messages"


class SharedReads(ABC):
    """Reads written once; a backend's read half subclasses it."""

    LIVE: str  # the test of a live (not deleted) message row
    TIMELINE: str  # the test of what the channel shows: top level and broadcast replies
    USER_COLUMN: str  # the users table's user id column
    _chan_ids: dict[tuple[str, str], int]

    @abstractmethod
    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        """The rows of ``sql`` (``?`` placeholders)."""

    @abstractmethod
    def bytes_on_disk(self) -> int:
        """What the store takes on disk (each backend counts its own)."""

    def _chan(self, team: str, channel: str) -> int | None:
        found = self._chan_ids.get((team, channel))
        if found is None:
            rows = self._read(
                "SELECT id FROM channels WHERE team = ? AND channel = ?", (team, channel)
            )
            if not rows:
                return None
            found = self._chan_ids[(team, channel)] = int(rows[0][0])
        return found

    # -- messages -----------------------------------------------------------------------------

    def get(self, team: str, channel: str, ts: str) -> Message | None:
        """The stored message at ``ts``, a tombstone (``deleted=True``, no text) included."""
        chan = self._chan(team, channel)
        if chan is None:
            return None
        rows = self._read(f"{_SELECT} WHERE chan = ? AND ts_key = ?", (chan, ts_key(ts)))
        return message_from_row(channel, *rows[0]) if rows else None

    def messages(
        self,
        team: str,
        channel: str,
        *,
        limit: int | None = None,
        oldest: str | None = None,
        latest: str | None = None,
        scope: Scope = "all",
    ) -> list[Message]:
        """Live messages (no tombstones) oldest to newest; ``limit`` keeps the newest.

        ``oldest``/``latest`` bound the ts (inclusive); ``scope="timeline"`` keeps what the
        channel shows (top-level messages and broadcast replies), ``"all"`` adds the replies.
        """
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
        chan = self._chan(team, channel)
        if chan is None:
            return []
        where, args = ["chan = ?", self.LIVE], [chan]
        if oldest is not None:
            where.append("ts_key >= ?")
            args.append(ts_key(oldest))
        if latest is not None:
            where.append("ts_key <= ?")
            args.append(ts_key(latest))
        if scope == "timeline":
            where.append(self.TIMELINE)
        sql = f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY ts_key DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self._read(sql, args)
        rows.reverse()
        return [message_from_row(channel, *row) for row in rows]

    def replies(self, team: str, channel: str, thread_ts: str) -> list[Message]:
        """A thread's live replies (not its root), oldest to newest."""
        chan = self._chan(team, channel)
        if chan is None:
            return []
        root = ts_key(thread_ts)
        rows = self._read(
            f"{_SELECT} WHERE chan = ? AND thread_key = ? AND ts_key != ? AND {self.LIVE} "
            "ORDER BY ts_key",
            (chan, root, root),
        )
        return [message_from_row(channel, *row) for row in rows]

    def iter_messages(
        self, team: str, channel: str, *, batch: int = 10_000
    ) -> Iterator[list[Message]]:
        """Every live message of the channel, oldest first, ``batch`` at a time (what warms
        an in-memory index without holding the whole channel twice)."""
        chan = self._chan(team, channel)
        if chan is None:
            return
        after = -1
        while True:
            rows = self._read(
                f"SELECT ts_key, {COLUMNS} FROM messages WHERE chan = ? AND ts_key > ? "
                f"AND {self.LIVE} ORDER BY ts_key LIMIT {int(batch)}",
                (chan, after),
            )
            if not rows:
                return
            after = int(rows[-1][0])
            yield [message_from_row(channel, *row[1:]) for row in rows]

    # -- names, pins, files, cursors ----------------------------------------------------------

    def channel_names(self, team: str) -> dict[str, str]:
        rows = self._read(
            "SELECT channel, name FROM channels WHERE team = ? AND name IS NOT NULL", (team,)
        )
        return {str(c): str(n) for c, n in rows}

    def user_names(self, team: str) -> dict[str, str]:
        rows = self._read(f"SELECT {self.USER_COLUMN}, name FROM users WHERE team = ?", (team,))
        return {str(u): str(n) for u, n in rows}

    def pins(self, team: str, channel: str) -> list[str]:
        chan = self._chan(team, channel)
        if chan is None:
            return []
        rows = self._read(
            "SELECT m.ts FROM pins p JOIN messages m ON m.chan = p.chan AND m.ts_key = p.ts_key "
            "WHERE p.chan = ? ORDER BY p.ts_key",
            (chan,),
        )
        return [str(ts) for (ts,) in rows]

    def file(self, team: str, file_id: str) -> FileRef | None:
        rows = self._read(
            "SELECT record FROM files WHERE team = ? AND file_id = ?", (team, file_id)
        )
        return FileRef.model_validate_json(rows[0][0]) if rows else None

    def cursor(self, team: str, channel: str, kind: str = "history") -> BackfillCursor | None:
        chan = self._chan(team, channel)
        if chan is None:
            return None
        rows = self._read("SELECT cursor FROM cursors WHERE chan = ? AND kind = ?", (chan, kind))
        return BackfillCursor.model_validate_json(rows[0][0]) if rows else None

    def channels(self, team: str | None = None) -> list[ChannelKey]:
        """Every channel the store knows (forgotten ones included: they keep their key)."""
        sql, args = "SELECT team, channel FROM channels", []
        if team is not None:
            sql, args = sql + " WHERE team = ?", [team]
        return [ChannelKey(t, c) for t, c in self._read(sql + " ORDER BY team, channel", args)]

    # -- stats --------------------------------------------------------------------------------

    def _totals(self, where: str, schema_version: int, per: list[ChannelStats]) -> StoreStats:
        """The store's stats from its channels' (each backend counts those its own way)."""
        return StoreStats(
            path=where,
            schema_version=schema_version,
            channels=len(per),
            messages=sum(c.messages for c in per),
            threads=sum(c.threads for c in per),
            tombstones=sum(c.tombstones for c in per),
            bytes_on_disk=self.bytes_on_disk(),
            per_channel=per,
        )
