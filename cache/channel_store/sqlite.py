"""The embedded channel store: one SQLite file in the data dir (WAL), standard library only.

    store = SqliteChannelStore(data_dir)                 # the bot: the one writer
    result = store.write([MessagePosted(team, message), ...])   # one transaction; ack after it
    store.messages(team, channel, limit=200)             # any thread, never blocks the writer
    reader = SqliteChannelStore(data_dir, read_only=True)  # `chanctx store stats` beside the bot

One writer connection (serialised by a lock) and one read-only connection per reading thread:
in WAL mode readers see the last commit and neither blocks the other. The writer holds an
exclusive lock on ``channels.lock`` for as long as the store is open; a second writer on the
same data dir stops with :class:`StoreLocked`. A commit with ``synchronous=FULL`` is on disk
when :meth:`write` returns (docs/design.md says why FULL, not NORMAL).

With ``index_after`` a write commits the message rows without their full-text words, and a
thread of the store indexes them at most that many seconds later, in larger batches
(``_deferred_index``: the mark of what is indexed, the catch-up at open after a kill).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from chanctx.cache.channel_store._apply import Applier
from chanctx.cache.channel_store._deferred_index import (
    Indexer,
    index_chunk,
    newest_id,
    read_mark,
    write_mark,
)
from chanctx.cache.channel_store._errors import StoreCorrupt, StoreFull
from chanctx.cache.channel_store._lock import DirLock
from chanctx.cache.channel_store._maintenance import (
    checkpoint,
    drop_oldest,
    optimize_pending,
    purge_before,
)
from chanctx.cache.channel_store._protocol import ChannelStore
from chanctx.cache.channel_store._reads import Reads
from chanctx.cache.channel_store._records import StoreEvent, WriteResult
from chanctx.cache.channel_store._rules import retention_horizon
from chanctx.cache.channel_store._schema import check_header, prepare

__all__ = ["DB_NAME", "LOCK_NAME", "SqliteChannelStore"]

log = logging.getLogger("chanctx.cache.channel_store")

DB_NAME = "channels.sqlite3"
LOCK_NAME = "channels.lock"
_FULL, _CORRUPT, _NOTADB = 13, 11, 26  # SQLite result codes


class SqliteChannelStore(Reads):
    """The channel store in ``data_dir/channels.sqlite3``; see the module docstring."""

    def __init__(
        self,
        data_dir: Path,
        *,
        read_only: bool = False,
        retention_days: int | None = None,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        page_limit: int | None = None,
        erase_interval: float = 0.0,
        index_after: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``retention_days``: writes older than that are refused (and :meth:`purge` deletes
        them). ``page_limit``: a hard cap on the file in pages (past it a write fails with
        :class:`StoreFull`, exactly as on a full disk). ``erase_interval``: run the erase pass
        after a batch that removed text at most this often (seconds; :meth:`erase` and
        :meth:`close` always run it). ``index_after``: index new messages' words at most this
        many seconds after their commit, off the write's path (None: in the write's own
        transaction; ``math.inf``: only when :meth:`index_pending` or :meth:`close` runs)."""
        if retention_days is not None and retention_days <= 0:
            raise ValueError(f"retention_days must be a positive integer, got {retention_days!r}")
        if index_after is not None and not index_after >= 0:
            raise ValueError(f"index_after must be a number of seconds >= 0, got {index_after!r}")
        self.path = Path(data_dir) / DB_NAME
        self.read_only = read_only
        self.retention_days = retention_days
        self._clock = clock
        self._erase_interval = erase_interval
        self._last_erase = float("-inf")
        self._write_lock = threading.Lock()
        self._lock: DirLock | None = None
        self._db: sqlite3.Connection | None = None
        self._indexer: Indexer | None = None
        if read_only:
            if not self.path.exists():
                raise StoreCorrupt(self.path, "no such file")
            check_header(self.path)
            super().__init__(self.path)
            self.schema_version = self._check_readable()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = DirLock(self.path.parent / LOCK_NAME)
        try:
            check_header(self.path)
            self._db = self._connect(synchronous, page_limit)
            self.schema_version = prepare(self._db, self.path)
        except BaseException:
            self._close_writer()
            raise
        super().__init__(self.path)
        self._applier = Applier(self._db)
        # A kill between a commit and its indexing, or between a commit and its erase pass
        # (a shard pending, the old pages in the log): finish both before anything else.
        with self._write_lock:
            if self._catch_up_or_log():  # then no mark, or one at the newest row
                wanted = None if index_after is None else newest_id(self._db)
                if wanted != self._applier.mark:
                    self._set_mark(wanted)
            self._erase_after_commit()
        if index_after is not None and index_after != float("inf"):
            self._indexer = Indexer(self._index_some, index_after)

    def _connect(self, synchronous: str, page_limit: int | None) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise StoreCorrupt(self.path, str(error)) from None
        try:
            # auto_vacuum only takes effect on a new file (before its first table).
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode != "wal":
                raise StoreCorrupt(self.path, f"journal mode {mode}, not wal")
            db.execute(f"PRAGMA synchronous = {synchronous}")
            self._synchronous = synchronous
            db.execute("PRAGMA secure_delete = ON")
            db.execute("PRAGMA temp_store = MEMORY")  # no sort spills with text in /tmp
            db.execute("PRAGMA busy_timeout = 5000")
            if page_limit is not None:
                db.execute(f"PRAGMA max_page_count = {int(page_limit)}")
        except sqlite3.DatabaseError as error:
            db.close()
            raise StoreCorrupt(self.path, str(error)) from None
        return db

    def _check_readable(self) -> int:
        try:
            version = int(self._reader().execute("PRAGMA user_version").fetchone()[0])
            self._reader().execute("SELECT count(*) FROM channels").fetchone()
        except sqlite3.DatabaseError as error:
            raise StoreCorrupt(self.path, str(error)) from None
        return version

    # -- writes -------------------------------------------------------------------------------

    def write(self, events: Sequence[StoreEvent]) -> WriteResult:
        """Apply ``events`` in one transaction; when this returns they are on disk.

        All or nothing: an error (a bad ts, :class:`StoreFull`) leaves the store as it was.
        """

        def apply_all(applier: Applier, result: WriteResult) -> None:
            for event in events:
                applier.apply(event, result)

        return self._transact(apply_all, inline=False)

    def transact(self, apply: Callable[[Applier, WriteResult], None]) -> WriteResult:
        """Run ``apply`` in one writer transaction, as :meth:`write` runs its events (the bulk
        writer of ``bulk`` goes through here); the same rollback, errors and erase pass. The
        rows it writes are indexed inside it (``apply`` may write the index itself)."""
        return self._transact(apply, inline=True)

    def _transact(self, apply: Callable[[Applier, WriteResult], None], inline: bool) -> WriteResult:
        db = self._writer()
        result = WriteResult()
        with self._write_lock:
            self._applier.horizon = self._horizon()
            marked = self._applier.mark is not None
            try:
                if inline and marked:
                    # Every row indexed, then ``apply``'s rows indexed as it writes them (no
                    # mark for it), and the mark moved past them in the same transaction.
                    self._catch_up()
                    self._applier.mark = None
                db.execute("BEGIN IMMEDIATE")
                apply(self._applier, result)
                if inline and marked:
                    write_mark(db, newest_id(db))
                db.execute("COMMIT")
            except BaseException as error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                self._applier.forget_cache()
                if marked:
                    self._applier.mark = read_mark(db)
                if isinstance(error, sqlite3.Error):
                    raise self._translated(error) from None
                raise
            self.row_cache.wrote(self._applier.take_touched())  # search's row ids go stale
            if self._applier.take_rows_removed():  # and, row ids freed, the rows' ts too
                self.row_cache.wrote_all()
            if marked:
                self._committed(inline)
            if result.erased and self._clock() - self._last_erase >= self._erase_interval:
                self._erase_after_commit()
        return result

    # -- indexing after the commit (``_deferred_index``) ---------------------------------------

    def index_pending(self) -> None:
        """Index every message written so far (with ``index_after``: what the indexer would)."""
        with self._write_lock:
            try:
                self._catch_up()
            except sqlite3.Error as error:
                raise self._translated(error) from None

    def _committed(self, inline: bool) -> None:
        """After a commit (the write lock held): the mark as it now is, the indexer told."""
        if inline:
            self._applier.mark = read_mark(self._writer())
        elif self._indexer is not None and self._applier.mark is not None:
            waiting = self._applier.newest - self._applier.mark
            if waiting > 0:
                self._indexer.written(waiting)

    def _index_some(self) -> bool:
        """One indexing transaction (the indexer's thread); whether rows are left."""
        with self._write_lock:
            if self._db is None:
                return False
            return self._index_chunk()

    def _catch_up(self) -> None:
        """Index every row above the mark (the write lock held)."""
        while self._index_chunk():
            pass

    def _catch_up_or_log(self) -> bool:
        """:meth:`_catch_up`; a failure (a full disk) is logged and left for later (the rows
        stay above the mark, found by every read but a search): whether it succeeded."""
        try:
            self._catch_up()
        except sqlite3.Error as error:
            log.warning("channel store indexing postponed: %s", self._translated(error))
            return False
        return True

    def _index_chunk(self) -> bool:
        """Index the rows above the mark, :data:`CHUNK` at most, in one transaction that is
        not fsynced (the write lock held); whether rows are left above the new mark."""
        db = self._writer()
        mark = self._applier.mark = read_mark(db)
        if mark is None:
            return False
        newest = newest_id(db)
        if newest <= mark:
            return False
        db.execute("PRAGMA synchronous = NORMAL")
        try:
            db.execute("BEGIN IMMEDIATE")
            mark, chans = index_chunk(db, self._applier.shards(), mark, newest)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self._applier.forget_cache()
            raise
        finally:
            db.execute(f"PRAGMA synchronous = {self._synchronous}")
        self._applier.mark = mark
        self.row_cache.wrote(chans)  # their terms have new rows now
        return mark < newest

    def _set_mark(self, mark: int | None) -> None:
        """Write the mark alone (every row at or below it is indexed: the write lock held)."""
        db = self._writer()
        db.execute("BEGIN IMMEDIATE")
        try:
            write_mark(db, mark)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._applier.mark = mark

    def _erase_after_commit(self) -> None:
        """The batch is committed (the caller may ack it): an erase pass that fails now, for
        want of space to merge an index, is logged and left for the next pass
        (the shard stays ``pending`` in the file, so even a restart retries it)."""
        try:
            self._erase_locked()
        except (StoreFull, StoreCorrupt, sqlite3.Error) as error:
            log.warning("channel store erase pass postponed: %s", error)

    def erase(self) -> bool:
        """The erase pass (module ``_maintenance``); False if a reader kept the log from
        being emptied (the next pass retries)."""
        with self._write_lock:
            return self._erase_locked()

    def _erase_locked(self) -> bool:
        db = self._writer()
        try:
            optimize_pending(db)
            done = checkpoint(db)
        except sqlite3.Error as error:
            raise self._translated(error) from None
        self._last_erase = self._clock()
        return done

    def purge(self, *, now: float | None = None) -> int:
        """Delete what is older than ``retention_days`` (nothing without it); how many."""
        horizon = self._horizon(now)
        if horizon is None:
            return 0
        with self._write_lock:
            try:
                self._catch_up()  # purge_before takes each deleted row's words out
                gone = purge_before(self._writer(), horizon)
                self.row_cache.wrote_all()
                self._erase_locked()
                self._writer().execute("PRAGMA incremental_vacuum")
            except sqlite3.Error as error:
                raise self._translated(error) from None
        return gone

    def enforce_size(self, max_bytes: int) -> int:
        """Drop the oldest messages until the file's used bytes fit; how many (logged)."""
        with self._write_lock:
            try:
                self._catch_up()  # drop_oldest takes each deleted row's words out
                gone = drop_oldest(self._writer(), max_bytes)
                self.row_cache.wrote_all()
                self._erase_locked()
            except sqlite3.Error as error:
                raise self._translated(error) from None
        return gone

    def close(self) -> None:
        """Index what waits, run a pending erase pass, close every connection and release
        the data dir."""
        if self._indexer is not None:
            self._indexer.close()
            self._indexer = None
        if self._db is not None:
            try:
                with self._write_lock:
                    self._catch_up_or_log()
                    self._erase_locked()
            finally:
                self._close_writer()
        self._close_readers()

    def __enter__(self) -> SqliteChannelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------------

    def _horizon(self, now: float | None = None) -> int | None:
        return retention_horizon(self.retention_days, self._clock() if now is None else now)

    def _writer(self) -> sqlite3.Connection:
        if self._db is None:
            raise ValueError(f"{self.path}: the store is closed or read-only")
        return self._db

    def _close_writer(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _translated(self, error: sqlite3.Error) -> Exception:
        code = getattr(error, "sqlite_errorcode", None)
        if code is not None and code & 0xFF == _FULL:
            return StoreFull(self.path, str(error))
        if code is not None and code & 0xFF in (_CORRUPT, _NOTADB):
            return StoreCorrupt(self.path, str(error))
        return error


def _implements_the_protocol(store: SqliteChannelStore) -> ChannelStore:
    return store  # mypy --strict checks every method's signature against ChannelStore's
