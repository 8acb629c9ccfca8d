"""Retention, the size bound and the erase pass: the store's work beyond applying events.

All run on the writer connection, under the store's write lock, each in its own transactions.

The erase pass is what makes "deleted" mean gone from the file's bytes. ``secure_delete`` zeroes
a deleted row's bytes when its page is written, but two copies can outlive the row: the old
page in the write-ahead log (until a checkpoint copies the new page over it), and the deleted
words in the full-text index's segments (FTS5 records a deletion as a marker in a new segment;
SQLite 3.40 has no secure-delete option for FTS5, that came in 3.44). The pass merges each
index shard marked ``pending`` into one segment (``optimize``: the old segments' pages are
freed, and zeroed), then checkpoints the log with TRUNCATE, leaving it empty. A shard holds at
most ``2**SHARD_BITS`` messages (``_fts``), so one deletion costs one shard's merge, whatever
the size of the channel or of the store.
"""

from __future__ import annotations

import heapq
import logging
import sqlite3

from chanctx.cache.channel_store._apply import unindex
from chanctx.cache.channel_store._fts import shard_table

__all__ = ["checkpoint", "drop_oldest", "optimize_pending", "purge_before", "used_bytes"]

log = logging.getLogger("chanctx.cache.channel_store")


def optimize_pending(db: sqlite3.Connection) -> int:
    """Merge every index shard marked ``pending``; how many there were."""
    pending = [s for (s,) in db.execute("SELECT id FROM shards WHERE pending = 1")]
    for shard in pending:
        table = shard_table(shard)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            db.execute("UPDATE shards SET pending = 0 WHERE id = ?", (shard,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return len(pending)


def checkpoint(db: sqlite3.Connection) -> bool:
    """Copy the log into the file and empty it; False if a reader kept it from finishing."""
    busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return not busy


def used_bytes(db: sqlite3.Connection) -> int:
    """Bytes of the file in use (its pages less the free ones)."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def _delete_rows(db: sqlite3.Connection, chan: int, below: int, limit: int) -> int:
    """Delete the oldest messages of ``chan`` below ts key ``below`` (at most ``limit``)."""
    rows = db.execute(
        "SELECT id, text, more, deleted FROM messages WHERE chan = ? AND ts_key < ? "
        "ORDER BY ts_key LIMIT ?",
        (chan, below, limit),
    ).fetchall()
    for row_id, text, more, deleted in rows:
        if not deleted:
            unindex(db, chan, row_id, text, more)  # marks its shard pending
    db.executemany("DELETE FROM messages WHERE id = ?", [(r[0],) for r in rows])
    return len(rows)


def purge_before(db: sqlite3.Connection, horizon: int, chunk: int = 10_000) -> int:
    """Delete every message (tombstones too) with a ts key below ``horizon``; how many."""
    total = 0
    for (chan,) in db.execute("SELECT id FROM channels").fetchall():
        while True:
            db.execute("BEGIN IMMEDIATE")
            try:
                gone = _delete_rows(db, chan, horizon, chunk)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            total += gone
            if gone < chunk:
                break
    return total


def drop_oldest(db: sqlite3.Connection, max_bytes: int, chunk: int = 2_000) -> int:
    """Delete the oldest messages of the whole store until its used bytes fit ``max_bytes``.

    Oldest by ts across channels (a heap of each channel's oldest key). Each round deletes a
    chunk, merges the touched indexes (a deleted entry only frees space once merged) and
    measures again. Logs one warning when anything went. Returns how many messages went.
    """
    total = 0
    while used_bytes(db) > max_bytes:
        heap: list[tuple[int, int]] = []
        for (chan,) in db.execute("SELECT id FROM channels").fetchall():
            oldest = db.execute(
                "SELECT min(ts_key) FROM messages WHERE chan = ?", (chan,)
            ).fetchone()[0]
            if oldest is not None:
                heap.append((oldest, chan))
        if not heap:
            break
        heapq.heapify(heap)
        left = chunk
        db.execute("BEGIN IMMEDIATE")
        try:
            while left > 0 and heap:
                _, chan = heapq.heappop(heap)
                below = heap[0][0] + 1 if heap else 1 << 62
                gone = _delete_rows(db, chan, below, left)
                left -= gone
                nxt = db.execute(
                    "SELECT min(ts_key) FROM messages WHERE chan = ?", (chan,)
                ).fetchone()[0]
                if nxt is not None:
                    heapq.heappush(heap, (nxt, chan))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        total += chunk - left
        optimize_pending(db)
        db.execute("PRAGMA incremental_vacuum")
        if left == chunk:
            break
    if total:
        log.warning(
            "channel store over its size bound (%.1f MB): dropped the %d oldest messages",
            max_bytes / 1e6,
            total,
        )
    return total
