"""Everything the PostgreSQL store answers, each read on a pooled connection in autocommit.

A read sees the last committed state and never waits for a writer (MVCC). Channel ids are
cached once found: an id never changes (forgetting a channel keeps its row).

Search candidates are ``_pg_search``'s, from what earlier searches read while the channel's
search version holds (``_pg_search_cache``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from chanctx.cache import ts_key
from chanctx.cache.channel_store._pg_errors import translated
from chanctx.cache.channel_store._pg_search import PgSearch
from chanctx.cache.channel_store._pg_search_cache import SearchCache
from chanctx.cache.channel_store._pg_sql import pyformat
from chanctx.cache.channel_store._reads_shared import COLUMNS, SharedReads
from chanctx.cache.channel_store._records import (
    Candidate,
    ChannelStats,
    StoreStats,
)
from chanctx.cache.channel_store._rows import message_from_row
from chanctx.context import Message
from psycopg.rows import TupleRow

__all__ = ["PgReads"]

_SELECT = f"SELECT {COLUMNS} FROM messages"
_TABLES = ("channels", "users", "messages", "pins", "files", "cursors")


class PgReads(SharedReads):
    """The read half of the PostgreSQL store (mixed into ``PostgresChannelStore``)."""

    LIVE = "NOT deleted"
    TIMELINE = "(thread_key IS NULL OR thread_key = ts_key OR flags & 16 != 0)"
    USER_COLUMN = "user_id"

    where: str
    schema_version: int
    _connection: Callable[[], AbstractContextManager[psycopg.Connection[TupleRow]]]

    def __init__(self) -> None:
        self._chan_ids: dict[tuple[str, str], int] = {}
        self._search = PgSearch(self._query, cache=SearchCache())

    @property
    def search_cache(self) -> SearchCache | None:
        """What searches read before (None: every search reads everything anew)."""
        return self._search.cache

    @search_cache.setter
    def search_cache(self, cache: SearchCache | None) -> None:
        self._search.cache = cache

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[TupleRow]:
        try:
            with self._connection() as conn:
                return conn.execute(sql.encode(), args).fetchall()
        except psycopg.Error as error:
            raise translated(error, self.where) from None

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._query(pyformat(sql), args)

    # -- messages -----------------------------------------------------------------------------

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
            f"SELECT root, {COLUMNS} FROM ("
            f"SELECT true AS root, ts_key, {COLUMNS} FROM messages WHERE chan = %s "
            "AND ts_key = %s UNION ALL "
            f"SELECT false, ts_key, {COLUMNS} FROM messages WHERE chan = %s "
            "AND thread_key = %s AND ts_key != %s AND NOT deleted"
            ") t ORDER BY root DESC, ts_key",
            (chan, root, chan, root, root),
        )
        found = [message_from_row(channel, *row[1:]) for row in rows]
        if rows and rows[0][0]:
            return found[0], found[1:]
        return None, found

    def search_candidates(
        self,
        team: str,
        channel: str,
        terms: Sequence[str],
        limit: int,
        *,
        before: str | None = None,
    ) -> list[Candidate]:
        """The best ``limit`` messages for any of ``terms``, best first (``_pg_search``).

        Candidates for the ranking, not the ranking: the caller scores them with every signal
        it has (threads, neighbours, dates, people).
        """
        chan = self._chan(team, channel)
        if chan is None:
            return []
        older = None if before is None else ts_key(before)
        return self._search.candidates(chan, terms, limit, before=older)

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
        return self._totals(self.where, self.schema_version, per)

    def bytes_on_disk(self) -> int:
        """The store's tables with their TOAST and indexes (dead tuples included until the
        erase pass's VACUUM FULL rewrites them)."""
        names = ", ".join(f"pg_total_relation_size('{t}')" for t in _TABLES)
        return int(self._query(f"SELECT {' + '.join(names.split(', '))}")[0][0])
