"""The channel store on PostgreSQL: one store for every replica (``--database-url``).

    store = PostgresChannelStore("postgresql://chanctx@db/chanctx")  # schema "chanctx"
    store.write([MessagePosted(team, message), ...])   # one transaction; ack after it returns
    store.search_candidates(team, channel, ["checkout-api"], 50)

The same interface and rules as :class:`~chanctx.cache.channel_store.SqliteChannelStore`
(``_records``), through psycopg 3 and a connection pool. What differs:

* Many writers: every replica writes. A batch takes a transaction-level advisory lock per
  team it touches (in a fixed order, so two batches cannot deadlock), so the read-decide-write
  of the idempotency rule never races another replica's.
* Faults: the database down, failing over, refusing connections or past ``statement_timeout``
  raises :class:`StoreUnavailable` (an OSError, like ``StoreFull``), so the caller refuses the
  events instead of acknowledging them. The pool drops broken connections and connects again
  when the database is back: the same store object works again, no restart.
* Erasing: a deleted or edited-away text stays in its old row version (a dead tuple) until
  ``VACUUM FULL`` rewrites the table; :meth:`erase` runs it (docs/design.md, "The channel store
  on PostgreSQL", says what plain VACUUM does and does not do).
"""

from __future__ import annotations

import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import psycopg
from chanctx.cache.channel_store._pg_apply import PgApplier
from chanctx.cache.channel_store._pg_bulk import post_bulk
from chanctx.cache.channel_store._pg_errors import StoreUnavailable, translated
from chanctx.cache.channel_store._pg_reads import PgReads
from chanctx.cache.channel_store._pg_schema import TABLES, prepare_schema
from chanctx.cache.channel_store._records import (
    StoreEvent,
    WriteResult,
)
from chanctx.cache.channel_store._rows import MessageRow
from chanctx.cache.channel_store._rules import retention_horizon
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

__all__ = ["PostgresChannelStore", "StoreUnavailable"]

log = logging.getLogger("chanctx.cache.channel_store")

_FRESH = 0.25  # seconds a connection that just ran a statement is trusted without a check
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_TEAM_LOCKS = 0x63637332  # the advisory lock space of per-team write locks
# Writes hold this advisory lock shared, a purge or a size cut exclusive, each first in its
# transaction: their row locks never interleave (a size cut's DELETE and a batch's upsert took
# the same rows in opposite orders and deadlocked, found by a test running them together).
_REMOVAL_LOCK = 0x63637333
# A purge, a size cut or a forgotten channel removed rows: an erase pass is due, and searches
# read again (``_pg_schema``).
# The last statement of those transactions, as the flag alone was before: no new lock order.
_REMOVED = "UPDATE schema_version SET erase_pending = true, removed = removed + 1"


class PostgresChannelStore(PgReads):
    """The channel store in a PostgreSQL schema; see the module docstring."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "chanctx",
        retention_days: int | None = None,
        statement_timeout: float = 5.0,
        connect_timeout: float = 5.0,
        pool_size: int = 4,
        erase_interval: float | None = 0.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``statement_timeout`` (seconds) bounds every statement but the erase pass's VACUUM;
        ``connect_timeout`` bounds the wait for a connection (the database down: past it a
        call raises :class:`StoreUnavailable`). ``erase_interval``: run the erase pass after a
        batch that removed text at most this often (:meth:`erase` and :meth:`close` always
        run a pending one); None: never after a batch, the caller runs
        :meth:`erase_if_pending` on a thread of its own (off the path that acknowledges)."""
        if retention_days is not None and retention_days <= 0:
            raise ValueError(f"retention_days must be a positive integer, got {retention_days!r}")
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"schema must be a lower-case SQL identifier, got {schema!r}")
        try:
            info = conninfo_to_dict(url)
        except psycopg.ProgrammingError:
            raise ValueError(f"not a PostgreSQL URL: {_redacted(url)!r}") from None
        super().__init__()
        self.where = (
            f"postgresql {info.get('host', 'localhost')}:{info.get('port', 5432)}"
            f" {info.get('dbname', '')} schema {schema}"
        )
        self.schema = schema
        self.statement_timeout = statement_timeout
        self.retention_days = retention_days
        self._clock = clock
        self._erase_interval = erase_interval
        self._last_erase = float("-inf")
        self._erase_lock = threading.Lock()
        self._used: weakref.WeakKeyDictionary[psycopg.Connection[TupleRow], float] = (
            weakref.WeakKeyDictionary()
        )
        self._used_lock = threading.Lock()
        timeout_ms = int(statement_timeout * 1000)
        self._pool: ConnectionPool[psycopg.Connection[TupleRow]] = ConnectionPool(
            url,
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, round(connect_timeout)),
                "options": f"-c search_path={schema} -c statement_timeout={timeout_ms}",
                "application_name": "chanctx",
            },
            min_size=1,
            max_size=max(1, pool_size),
            timeout=connect_timeout,
            check=self._check,
            open=False,
            name=f"chanctx-{schema}",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
            with self._connection() as conn:
                conn.execute("SET statement_timeout = 0")  # waiting for another's migration
                self.schema_version = prepare_schema(conn, schema, self.where)
                conn.execute("RESET statement_timeout")
            if self._erase_pending():
                self._erase_after_commit()
        except psycopg.Error as error:
            self._pool.close()
            raise translated(error, self.where) from None
        except BaseException:
            self._pool.close()
            raise

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[TupleRow]]:
        with self._pool.connection() as conn:
            yield conn
            with self._used_lock:  # not after a failure: then the next use checks it
                self._used[conn] = time.monotonic()

    def _check(self, conn: psycopg.Connection[TupleRow]) -> None:
        """The pool's check of a connection before it hands it out (one round trip; a dead
        one is dropped and another taken), skipped for a connection that ran a statement in
        the last :data:`_FRESH` seconds: a served answer runs several statements back to back,
        and checking before each doubled its round trips. A database gone within that window
        fails the statement instead, as it would between a check and its statement."""
        with self._used_lock:
            used = self._used.get(conn)
        if used is not None and time.monotonic() - used < _FRESH:
            return
        ConnectionPool.check_connection(conn)

    # -- writes -------------------------------------------------------------------------------

    def write(self, events: Sequence[StoreEvent]) -> WriteResult:
        """Apply ``events`` in one transaction; when this returns they are committed.

        All or nothing: an error (a bad ts, :class:`StoreUnavailable`) leaves the store as it
        was, or, when the connection broke during the commit itself, possibly committed: a
        redelivered batch is then recognised as known.
        """
        result = WriteResult()
        teams = sorted({e.team for e in events})
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock_shared(%s)", (_REMOVAL_LOCK,))
                for team in teams:
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_TEAM_LOCKS, team)
                    )
                applier = PgApplier(conn, self._horizon())
                applier.prefetch(events)
                for event in events:
                    applier.apply(event, result)
                applier.flush()
                if applier.forgot:
                    conn.execute(_REMOVED)
                elif result.erased:
                    conn.execute("UPDATE schema_version SET erase_pending = true")
        except psycopg.Error as error:
            raise translated(error, self.where) from None
        if (
            result.erased
            and self._erase_interval is not None
            and self._clock() - self._last_erase >= self._erase_interval
        ):
            self._erase_after_commit()
        return result

    def post_rows(self, team: str, channel: str, rows: Sequence[MessageRow]) -> WriteResult:
        """``write`` of the posts ``rows`` hold (``bulk.message_row`` and kin), in one
        transaction: the rows the store lacks go in with one COPY (``_pg_bulk``)."""
        result = WriteResult()
        if not rows:
            return result
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock_shared(%s), pg_advisory_xact_lock(%s, "
                    "hashtext(%s))",
                    (_REMOVAL_LOCK, _TEAM_LOCKS, team),
                )
                applier = PgApplier(conn, self._horizon())
                post_bulk(applier, team, channel, rows, result)
                applier.flush()
                if result.erased:
                    conn.execute("UPDATE schema_version SET erase_pending = true")
        except psycopg.Error as error:
            raise translated(error, self.where) from None
        return result

    def _erase_after_commit(self) -> None:
        """The batch is committed (the caller may ack it): an erase pass that fails now is
        logged and left for the next one (``erase_pending`` stays set in the database)."""
        try:
            self.erase()
        except (OSError, psycopg.Error) as error:
            log.warning("channel store erase pass postponed: %s", error)

    def _erase_pending(self) -> bool:
        rows = self._query("SELECT erase_pending FROM schema_version")
        return bool(rows and rows[0][0])

    def erase(self) -> bool:
        """Rewrite the store's tables (``VACUUM FULL``): removed text leaves their files.

        Plain VACUUM only marks a dead tuple's space reusable; its bytes stay in the page
        until a later row overwrites them. VACUUM FULL writes a new copy of each table and its
        indexes holding only live rows and deletes the old files. It locks each table for the
        time of its copy (readers wait), which is why it runs only after a batch that removed
        text, at most every ``erase_interval`` seconds.
        """
        with self._erase_lock:
            try:
                with self._connection() as conn:
                    conn.execute("UPDATE schema_version SET erase_pending = false")
                    conn.execute("SET statement_timeout = 0")
                    try:
                        conn.execute(f"VACUUM FULL {', '.join(TABLES)}".encode())
                    finally:
                        conn.execute("RESET statement_timeout")
            except psycopg.Error as error:
                self._mark_pending()
                raise translated(error, self.where) from None
            self._last_erase = self._clock()
        return True

    def ping(self) -> None:
        """One round trip to the database; StoreUnavailable if it does not answer in time."""
        self._query("SELECT 1")

    def erase_if_pending(self) -> bool:
        """Run the erase pass if a batch (on any replica) removed text since the last one;
        whether it ran. Raises StoreUnavailable."""
        return self.erase() if self._erase_pending() else False

    def _mark_pending(self) -> None:
        try:
            with self._connection() as conn:
                conn.execute("UPDATE schema_version SET erase_pending = true")
        except psycopg.Error:
            pass  # the database is gone; the flag set by the write itself still stands

    def purge(self, *, now: float | None = None) -> int:
        """Delete what is older than ``retention_days`` (nothing without it); how many."""
        horizon = self._horizon(now)
        if horizon is None:
            return 0
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_REMOVAL_LOCK,))
                conn.execute("DELETE FROM pins WHERE ts_key < %s", (horizon,))
                gone = conn.execute("DELETE FROM messages WHERE ts_key < %s", (horizon,)).rowcount
                if gone:  # ``removed``: every replica's remembered search reads go stale
                    conn.execute(_REMOVED)
        except psycopg.Error as error:
            raise translated(error, self.where) from None
        if gone:
            self.erase()
        return gone

    def enforce_size(self, max_bytes: int) -> int:
        """Drop the oldest messages until the tables fit ``max_bytes``; how many (logged).

        The bytes a row costs are the tables' size over their rows; the oldest rows beyond
        what fits go in one statement, then VACUUM FULL gives the space back. A few rounds at
        most: the estimate is an average.
        """
        total = 0
        for _ in range(5):
            size = self.bytes_on_disk()
            count = int(self._query("SELECT count(*) FROM messages")[0][0])
            if size <= max_bytes or count == 0:
                break
            keep = int(count * max_bytes / size * 0.95)
            try:
                with self._connection() as conn, conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_REMOVAL_LOCK,))
                    gone = conn.execute(
                        "DELETE FROM messages WHERE (chan, ts_key) IN (SELECT chan, ts_key "
                        "FROM messages ORDER BY ts_key LIMIT %s)",
                        (max(count - keep, 1),),
                    ).rowcount
                    conn.execute(_REMOVED)
            except psycopg.Error as error:
                raise translated(error, self.where) from None
            total += gone
            self.erase()
        if total:
            log.warning(
                "channel store over its size bound (%.1f MB): dropped the %d oldest messages",
                max_bytes / 1e6,
                total,
            )
        return total

    def close(self) -> None:
        """Run a pending erase pass and close the pool's connections."""
        try:
            if not self._pool.closed and self._erase_pending():
                self.erase()
        except OSError as error:
            log.warning("channel store erase pass at close postponed: %s", error)
        finally:
            self._pool.close()

    def __enter__(self) -> PostgresChannelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _horizon(self, now: float | None = None) -> int | None:
        return retention_horizon(self.retention_days, self._clock() if now is None else now)


def _redacted(url: str) -> str:
    return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", url)
