"""Everything the store answers, read through per-thread read-only connections.

Each reading thread gets its own connection (``mode=ro``, ``query_only``): in WAL mode it reads
the last committed state and never waits for the writer, nor makes the writer wait (only a
checkpoint waits for readers to move past old pages, and retries at the next erase pass).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chanctx.cache import ts_key
from chanctx.cache.channel_store._errors import StoreCorrupt
from chanctx.cache.channel_store._fts import scoped_phrases
from chanctx.cache.channel_store._fts_search import RowCache, candidates
from chanctx.cache.channel_store._reads_shared import COLUMNS, SharedReads
from chanctx.cache.channel_store._records import (
    Candidate,
    ChannelStats,
    StoreStats,
)
from chanctx.cache.channel_store._rows import message_from_row
from chanctx.context import Message

__all__ = ["Reads"]

_SELECT = f"SELECT {COLUMNS} FROM messages"


class Reads(SharedReads):
    """The read half of the SQLite store (mixed into ``SqliteChannelStore``)."""

    LIVE = "deleted = 0"
    TIMELINE = "(thread_key IS NULL OR thread_key = ts_key OR flags & 16)"
    USER_COLUMN = "user"
    read_only = False  # the store sets it: another process may be the writer

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._chan_ids: dict[tuple[str, str], int] = {}
        # Row ids and ts that search_candidates read before; the writer tells it what changed.
        self.row_cache = RowCache()

    def _reader(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            try:
                db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
                db.execute("PRAGMA query_only = 1")
                db.execute("PRAGMA busy_timeout = 5000")
            except sqlite3.Error as error:
                raise StoreCorrupt(self.path, str(error)) from None
            self._local.db = db
            with self._readers_lock:
                self._readers.append(db)
        return db

    def _close_readers(self) -> None:
        with self._readers_lock:
            for db in self._readers:
                db.close()
            self._readers.clear()
        self._local = threading.local()

    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._reader().execute(sql, args).fetchall()
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError) and "no such table" not in str(error):
                raise
            raise StoreCorrupt(self.path, str(error)) from None

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        return self._query(sql, args)

    # -- messages -----------------------------------------------------------------------------

    def get_many(self, team: str, channel: str, ts: Sequence[str]) -> list[Message]:
        """The live messages among ``ts``, oldest to newest (unknown and deleted left out)."""
        chan = self._chan(team, channel)
        if chan is None or not ts:
            return []
        keys = sorted({ts_key(t) for t in ts})
        out: list[Message] = []
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self._query(
                f"{_SELECT} WHERE chan = ? AND deleted = 0 AND ts_key IN ({marks}) ORDER BY ts_key",
                [chan, *part],
            )
            out.extend(message_from_row(channel, *row) for row in rows)
        return out

    def thread(
        self, team: str, channel: str, thread_ts: str
    ) -> tuple[Message | None, list[Message]]:
        """``get`` of the root (a tombstone included) and ``replies``: two reads in process."""
        return self.get(team, channel, thread_ts), self.replies(team, channel, thread_ts)

    def search_candidates(
        self,
        team: str,
        channel: str,
        terms: Sequence[str],
        limit: int,
        *,
        before: str | None = None,
    ) -> list[Candidate]:
        """The best ``limit`` messages for any of ``terms`` by FTS5's bm25(), best first, when
        their matches are few; with common terms, what ``_fts_search`` can score cheaply.

        Candidates for the ranking, not the ranking: the caller scores them with every
        signal it has (threads, neighbours, dates, people). The terms are the channel's own
        (``_fts``), so bm25 weighs them by how many of the channel's messages hold them; each
        shard the channel has words in gives its best ``limit``, and the best of those win.
        """
        chan = self._chan(team, channel)
        if chan is None or limit <= 0:
            return []
        phrases = scoped_phrases(chan, terms)
        if not phrases:
            return []
        cache = self._fresh_cache()
        shards = cache.shards(
            chan,
            lambda: [
                s for (s,) in self._query("SELECT shard FROM chan_shards WHERE chan = ?", (chan,))
            ],
        )
        if not shards:
            return []
        # With ``before``: the best ``limit`` older ones, sought among the best of all.
        older = None if before is None else ts_key(before)
        return candidates(self._query, chan, shards, phrases, limit, cache, before=older)

    def _fresh_cache(self) -> RowCache:
        """The row cache, emptied first when this store is read-only and another connection
        committed since this thread's last look (``PRAGMA data_version``; a thread's first look
        empties it too, having nothing to compare). The writer's own commits bump the
        generations of the channels they named instead (``SqliteChannelStore.transact``)."""
        if self.read_only:
            version = self._query("PRAGMA data_version")[0][0]
            if getattr(self._local, "data_version", None) != version:
                self.row_cache.wrote_all()
                self._local.data_version = version
        return self.row_cache

    # -- stats --------------------------------------------------------------------------------

    def stats(self) -> StoreStats:
        """Counts per channel and in all, and the bytes of the file, its log and its index."""
        per: list[ChannelStats] = []
        rows = self._query("SELECT id, team, channel, name FROM channels ORDER BY team, channel")
        for chan, team, channel, name in rows:
            live, stones = self._query(
                "SELECT count(*) FILTER (WHERE deleted = 0), count(*) FILTER (WHERE deleted = 1) "
                "FROM messages WHERE chan = ?",
                (chan,),
            )[0]
            threads = self._query(
                "SELECT count(DISTINCT thread_key) FROM messages WHERE chan = ? "
                "AND thread_key IS NOT NULL AND thread_key != ts_key AND deleted = 0",
                (chan,),
            )[0][0]
            oldest = self._query(
                "SELECT ts FROM messages WHERE chan = ? AND deleted = 0 ORDER BY ts_key LIMIT 1",
                (chan,),
            )
            newest = self._query(
                "SELECT ts FROM messages WHERE chan = ? AND deleted = 0 "
                "ORDER BY ts_key DESC LIMIT 1",
                (chan,),
            )
            per.append(
                ChannelStats(
                    team=team,
                    channel=channel,
                    name=name,
                    messages=live,
                    threads=threads,
                    tombstones=stones,
                    oldest_ts=oldest[0][0] if oldest else None,
                    newest_ts=newest[0][0] if newest else None,
                    backfill=self.cursor(team, channel),
                )
            )
        version = int(self._query("PRAGMA user_version")[0][0])
        return self._totals(str(self.path), version, per)

    def bytes_on_disk(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                total += Path(f"{self.path}{suffix}").stat().st_size
        return total
