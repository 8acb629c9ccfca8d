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
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``retention_days``: writes older than that are refused (and :meth:`purge` deletes
        them). ``page_limit``: a hard cap on the file in pages (past it a write fails with
        :class:`StoreFull`, exactly as on a full disk). ``erase_interval``: run the erase pass
        after a batch that removed text at most this often (seconds; :meth:`erase` and
        :meth:`close` always run it)."""
        if retention_days is not None and retention_days <= 0:
            raise ValueError(f"retention_days must be a positive integer, got {retention_days!r}")
        self.path = Path(data_dir) / DB_NAME
        self.read_only = read_only
        self.retention_days = retention_days
        self._clock = clock
        self._erase_interval = erase_interval
        self._last_erase = float("-inf")
        self._write_lock = threading.Lock()
        self._lock: DirLock | None = None
        self._db: sqlite3.Connection | None = None
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
        # A kill between a commit and its erase pass leaves a shard pending and the old
        # pages in the log: finish that pass before anything else.
        with self._write_lock:
            self._erase_after_commit()

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

        return self.transact(apply_all)

    def transact(self, apply: Callable[[Applier, WriteResult], None]) -> WriteResult:
        """Run ``apply`` in one writer transaction, as :meth:`write` runs its events (the bulk
        writer of ``bulk`` goes through here); the same rollback, errors and erase pass."""
        db = self._writer()
        result = WriteResult()
        with self._write_lock:
            self._applier.horizon = self._horizon()
            try:
                db.execute("BEGIN IMMEDIATE")
                apply(self._applier, result)
                db.execute("COMMIT")
            except BaseException as error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                self._applier.forget_cache()
                if isinstance(error, sqlite3.Error):
                    raise self._translated(error) from None
                raise
            self.row_cache.wrote(self._applier.take_touched())  # search's row ids go stale
            if result.erased and self._clock() - self._last_erase >= self._erase_interval:
                self._erase_after_commit()
        return result

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
                gone = drop_oldest(self._writer(), max_bytes)
                self.row_cache.wrote_all()
                self._erase_locked()
            except sqlite3.Error as error:
                raise self._translated(error) from None
        return gone

    def close(self) -> None:
        """Run a pending erase pass, close every connection and release the data dir."""
        if self._db is not None:
            try:
                with self._write_lock:
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
