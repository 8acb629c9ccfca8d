"""Everything the PostgreSQL store answers, each read on a pooled connection in autocommit.

A read sees the last committed state and never waits for a writer (MVCC). Channel ids are
cached once found: an id never changes (forgetting a channel keeps its row).

Search candidates are ``_pg_search``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from chanctx.cache import ts_key
from chanctx.cache.channel_store._pg_errors import translated
from chanctx.cache.channel_store._pg_search import PgSearch
from chanctx.cache.channel_store._records import (
    BackfillCursor,
    Candidate,
    ChannelKey,
    ChannelStats,
    Scope,
    StoreStats,
)
from chanctx.cache.channel_store._rows import message_from_row
from chanctx.context import FileRef, Message
from psycopg.rows import TupleRow

__all__ = ["PgReads"]

_COLUMNS = "ts, thread_ts, user_id, text, reply_count, flags, more"
_SELECT = f"SELECT {_COLUMNS} FROM messages"
_TIMELINE = "(thread_key IS NULL OR thread_key = ts_key OR flags & 16 != 0)"
_TABLES = ("channels", "users", "messages", "pins", "files", "cursors")


class PgReads:
    """The read half of the PostgreSQL store (mixed into ``PostgresChannelStore``)."""

    where: str
    schema_version: int
    _connection: Callable[[], AbstractContextManager[psycopg.Connection[TupleRow]]]

    def __init__(self) -> None:
        self._chan_ids: dict[tuple[str, str], int] = {}
        self._search = PgSearch(self._query)

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[TupleRow]:
        try:
            with self._connection() as conn:
                return conn.execute(sql.encode(), args).fetchall()
        except psycopg.Error as error:
            raise translated(error, self.where) from None

    def _chan(self, team: str, channel: str) -> int | None:
        found = self._chan_ids.get((team, channel))
        if found is None:
            rows = self._query(
                "SELECT id FROM channels WHERE team = %s AND channel = %s", (team, channel)
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
        rows = self._query(f"{_SELECT} WHERE chan = %s AND ts_key = %s", (chan, ts_key(ts)))
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
        """Live messages (no tombstones) oldest to newest; ``limit`` keeps the newest."""
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ValueError(f"limit must be a non-negative integer or None, got {limit!r}")
        chan = self._chan(team, channel)
        if chan is None:
            return []
        where, args = ["chan = %s", "NOT deleted"], [chan]
        if oldest is not None:
            where.append("ts_key >= %s")
            args.append(ts_key(oldest))
        if latest is not None:
            where.append("ts_key <= %s")
            args.append(ts_key(latest))
        if scope == "timeline":
            where.append(_TIMELINE)
        sql = f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY ts_key DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self._query(sql, args)
        rows.reverse()
        return [message_from_row(channel, *row) for row in rows]

    def get_many(self, team: str, channel: str, ts: Sequence[str]) -> list[Message]:
        """The live messages among ``ts``, oldest to newest (unknown and deleted left out)."""
        chan = self._chan(team, channel)
        if chan is None or not ts:
            return []
        keys = sorted({ts_key(t) for t in ts})
        rows = self._query(
            f"{_SELECT} WHERE chan = %s AND NOT deleted AND ts_key = ANY(%s) ORDER BY ts_key",
            (chan, keys),
        )
        return [message_from_row(channel, *row) for row in rows]

    def replies(self, team: str, channel: str, thread_ts: str) -> list[Message]:
        """A thread's live replies (not its root), oldest to newest."""
        chan = self._chan(team, channel)
        if chan is None:
            return []
        root = ts_key(thread_ts)
        rows = self._query(
            f"{_SELECT} WHERE chan = %s AND thread_key = %s AND ts_key != %s AND NOT deleted "
            "ORDER BY ts_key",
            (chan, root, root),
        )
        return [message_from_row(channel, *row) for row in rows]

    def thread(
        self, team: str, channel: str, thread_ts: str
    ) -> tuple[Message | None, list[Message]]:
        """``get`` of the root (a tombstone included) and ``replies``, in one statement: a
        served answer reads each of its threads older than the history this way, and over a
        loaded machine's loopback each statement is a round trip of a millisecond or more."""
        chan = self._chan(team, channel)
        if chan is None:
            return None, []
        root = ts_key(thread_ts)
        rows = self._query(
            f"SELECT root, {_COLUMNS} FROM ("
            f"SELECT true AS root, ts_key, {_COLUMNS} FROM messages WHERE chan = %s "
            "AND ts_key = %s UNION ALL "
            f"SELECT false, ts_key, {_COLUMNS} FROM messages WHERE chan = %s "
            "AND thread_key = %s AND ts_key != %s AND NOT deleted"
            ") t ORDER BY root DESC, ts_key",
            (chan, root, chan, root, root),
        )
        found = [message_from_row(channel, *row[1:]) for row in rows]
        if rows and rows[0][0]:
            return found[0], found[1:]
        return None, found

    def iter_messages(
        self, team: str, channel: str, *, batch: int = 10_000
    ) -> Iterator[list[Message]]:
        """Every live message of the channel, oldest first, ``batch`` at a time."""
        chan = self._chan(team, channel)
        if chan is None:
            return
        after = -1
        while True:
            rows = self._query(
                "SELECT ts_key, ts, thread_ts, user_id, text, reply_count, flags, more "
                "FROM messages WHERE chan = %s AND ts_key > %s AND NOT deleted "
                f"ORDER BY ts_key LIMIT {int(batch)}",
                (chan, after),
            )
            if not rows:
                return
            after = int(rows[-1][0])
            yield [message_from_row(channel, *row[1:]) for row in rows]

    def search_candidates(
        self, team: str, channel: str, terms: Sequence[str], limit: int
    ) -> list[Candidate]:
        """The best ``limit`` messages for any of ``terms``, best first (``_pg_search``).

        Candidates for the ranking, not the ranking: the caller scores them with every signal
        it has (threads, neighbours, dates, people).
        """
        chan = self._chan(team, channel)
        if chan is None:
            return []
        return self._search.candidates(chan, terms, limit)

    # -- names, pins, files, cursors ----------------------------------------------------------

    def channel_names(self, team: str) -> dict[str, str]:
        rows = self._query(
            "SELECT channel, name FROM channels WHERE team = %s AND name IS NOT NULL", (team,)
        )
        return {str(c): str(n) for c, n in rows}

    def user_names(self, team: str) -> dict[str, str]:
        rows = self._query("SELECT user_id, name FROM users WHERE team = %s", (team,))
        return {str(u): str(n) for u, n in rows}

    def pins(self, team: str, channel: str) -> list[str]:
        chan = self._chan(team, channel)
        if chan is None:
            return []
        rows = self._query(
            "SELECT m.ts FROM pins p JOIN messages m ON m.chan = p.chan AND m.ts_key = p.ts_key "
            "WHERE p.chan = %s ORDER BY p.ts_key",
            (chan,),
        )
        return [str(ts) for (ts,) in rows]

    def file(self, team: str, file_id: str) -> FileRef | None:
        rows = self._query(
            "SELECT record FROM files WHERE team = %s AND file_id = %s", (team, file_id)
        )
        return FileRef.model_validate_json(rows[0][0]) if rows else None

    def cursor(self, team: str, channel: str, kind: str = "history") -> BackfillCursor | None:
        chan = self._chan(team, channel)
        if chan is None:
            return None
        rows = self._query("SELECT cursor FROM cursors WHERE chan = %s AND kind = %s", (chan, kind))
        return BackfillCursor.model_validate_json(rows[0][0]) if rows else None

    def channels(self, team: str | None = None) -> list[ChannelKey]:
        """Every channel the store knows (forgotten ones included: they keep their key)."""
        sql, args = "SELECT team, channel FROM channels", []
        if team is not None:
            sql, args = sql + " WHERE team = %s", [team]
        return [ChannelKey(t, c) for t, c in self._query(sql + " ORDER BY team, channel", args)]

    # -- stats --------------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        """Counts per channel and in all, and the bytes of the store's tables and indexes."""
        rows = self._query(
            "SELECT c.team, c.channel, c.name, "
            "count(m.ts_key) FILTER (WHERE NOT m.deleted), "
            "count(m.ts_key) FILTER (WHERE m.deleted), "
            "count(DISTINCT m.thread_key) FILTER (WHERE NOT m.deleted AND m.thread_key IS NOT NULL "
            "AND m.thread_key != m.ts_key), "
            "min(m.ts_key) FILTER (WHERE NOT m.deleted), max(m.ts_key) FILTER (WHERE NOT m.deleted) "
            "FROM channels c LEFT JOIN messages m ON m.chan = c.id "
            "GROUP BY c.id ORDER BY c.team, c.channel"
        )
        per: list[ChannelStats] = []
        for team, channel, name, live, stones, threads, oldest, newest in rows:
            chan = self._chan(team, channel)
            ends = self._query(
                "SELECT ts FROM messages WHERE chan = %s AND ts_key = ANY(%s) ORDER BY ts_key",
                (chan, [k for k in (oldest, newest) if k is not None]),
            )
            per.append(
                ChannelStats(
                    team=team,
                    channel=channel,
                    name=name,
                    messages=live,
                    threads=threads,
                    tombstones=stones,
                    oldest_ts=ends[0][0] if ends else None,
                    newest_ts=ends[-1][0] if ends else None,
                    backfill=self.cursor(team, channel),
                )
            )
        return StoreStats(
            path=self.where,
            schema_version=self.schema_version,
            channels=len(per),
            messages=sum(c.messages for c in per),
            threads=sum(c.threads for c in per),
            tombstones=sum(c.tombstones for c in per),
            bytes_on_disk=self.bytes_on_disk(),
            per_channel=per,
        )

    def bytes_on_disk(self) -> int:
        """The store's tables with their TOAST and indexes (dead tuples included until the
        erase pass's VACUUM FULL rewrites them)."""
        names = ", ".join(f"pg_total_relation_size('{t}')" for t in _TABLES)
        return int(self._query(f"SELECT {' + '.join(names.split(', '))}")[0][0])
