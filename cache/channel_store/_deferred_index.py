"""Indexing after the commit: the full-text words of new messages written in larger batches,
off the path that acknowledges them.

FTS5 writes a new segment at every commit that inserted into it (110-170 µs of CPU whatever
the commit holds), and a message's words are the largest part of what its commit writes. A
store opened with ``index_after`` commits the message rows alone; the words follow within
that many seconds, in a transaction of their own that indexes every message written since.

The mark says what is indexed: the ``meta`` row ``indexed_through`` holds a message row id,
and every live message at or below it is in the index, none above it is. The batch that
indexes rows advances the mark in the same transaction, so a kill at any moment leaves the
two in step, and an open indexes everything above the mark before the store is used (a kill
between a commit and its indexing loses no word). No mark means every message is indexed
(a store only ever opened without ``index_after``).

A row is read when it is indexed, not when it was written: an edit or a deletion arriving
before its message was indexed changes only the row, and a deleted row (a tombstone) is never
indexed, so its text never reaches the index. A row at or below the mark is kept in step as
every row was before (its words taken out and written again inside the write's transaction),
and so is a new row that takes an id at or below the mark (SQLite gives a new row the largest
id plus one, so a forgotten channel's last rows leave ids to take again).

The indexing commit is not fsynced (``synchronous=NORMAL`` for it alone): it holds nothing an
acknowledgement promised, and the next fsynced commit makes it durable with its own. A power
loss that took it takes its mark too, and the next open indexes those rows again.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

from chanctx.cache.channel_store._fts import index_rows

__all__ = ["CHUNK", "PLENTY", "Indexer", "index_chunk", "newest_id", "read_mark", "write_mark"]

log = logging.getLogger("chanctx.cache.channel_store")

_MARK = "indexed_through"
CHUNK = 2_000  # row ids an indexing transaction covers, at most (the writer waits meanwhile:
# 12-40 ms a 1,000 rows measured on the loaded machine)
PLENTY = 2_000  # rows waiting that start an indexing batch before its delay is over


def read_mark(db: sqlite3.Connection) -> int | None:
    """The row id every live message up to is indexed (None: every message is)."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (_MARK,)).fetchone()
    return None if row is None else int(row[0])


def write_mark(db: sqlite3.Connection, mark: int | None) -> None:
    if mark is None:
        db.execute("DELETE FROM meta WHERE key = ?", (_MARK,))
    else:
        db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (_MARK, str(int(mark))),
        )


def newest_id(db: sqlite3.Connection) -> int:
    return int(db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])


def index_chunk(
    db: sqlite3.Connection, shards: set[int], mark: int, newest: int
) -> tuple[int, set[int]]:
    """Inside a transaction: index the live rows above ``mark`` (at most :data:`CHUNK` ids,
    none above ``newest``) and move the mark past them; the new mark and the channels whose
    rows were indexed (a search's remembered row ids for them are stale)."""
    upto = min(newest, mark + CHUNK)
    rows = db.execute(
        "SELECT id, chan, text, more FROM messages WHERE id > ? AND id <= ? AND deleted = 0",
        (mark, upto),
    ).fetchall()
    index_rows(db, rows, shards)
    write_mark(db, upto)
    return upto, {int(row[1]) for row in rows}


class Indexer:
    """A thread that calls ``index_some`` (one indexing transaction; whether rows are left)
    ``delay`` seconds after the first commit :meth:`written` tells it of, or as soon as
    :data:`PLENTY` rows wait, until none is left."""

    def __init__(self, index_some: Callable[[], bool], delay: float) -> None:
        self._index_some = index_some
        self._delay = delay
        self._since: float | None = None  # when the oldest commit not indexed yet was told
        self._plenty = False
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="channel-store-index", daemon=True)
        self._thread.start()

    def written(self, waiting: int) -> None:
        """A commit left ``waiting`` rows (in all) above the mark."""
        with self._ready:
            if self._since is None:
                self._since = time.monotonic()
                self._ready.notify()
            if waiting >= PLENTY and not self._plenty:
                self._plenty = True
                self._ready.notify()

    def close(self) -> None:
        """Stop the thread (what waits is indexed by the store's close)."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join()

    def _due(self) -> bool:
        """Wait (the condition held) until a batch is due; False once closed."""
        while self._since is None and not self._closed:
            self._ready.wait()
        while not self._closed and not self._plenty:
            assert self._since is not None
            left = self._since + self._delay - time.monotonic()
            if left <= 0:
                break
            self._ready.wait(left)
        self._since, self._plenty = None, False
        return not self._closed

    def _run(self) -> None:
        while True:
            with self._ready:
                if not self._due():
                    return
            try:
                while self._index_some():
                    pass
            except Exception as error:  # the rows stay above the mark: the next batch retries
                log.warning("channel store indexing postponed: %s", error)
