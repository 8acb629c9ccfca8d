"""Applying a batch of events inside one PostgreSQL transaction (the rules are in ``_records``).

The same decisions as the SQLite store's applier, written for PostgreSQL: a message row is keyed
by ``(chan, ts_key)``, its lexemes are a column of the row (set from ``_rows.document`` in the
same statement as the text), so no separate index needs keeping in step.

Round trips are what a remote database charges for: the rows a batch's posts touch are read in
one query per channel before the batch is applied, and the row writes are held and sent
together before any other statement and at the end (COPY into a temporary table and one upsert
from it for a large batch, ``executemany`` for a small one), so a bulk import costs a few round
trips per batch, not two per message.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from chanctx.cache import ts_key
from chanctx.cache.channel_store._apply_events import EventApplier, RowMessage
from chanctx.cache.channel_store._pg_schema import TS_CONFIG
from chanctx.cache.channel_store._pg_sql import pyformat
from chanctx.cache.channel_store._records import MessagePosted, StoreEvent, WriteResult
from chanctx.cache.channel_store._rows import MessageRow, document, row_from_message
from chanctx.context import Message
from psycopg.rows import TupleRow

__all__ = ["PgApplier", "PgRow"]

Conn = psycopg.Connection[TupleRow]
_COLUMNS = "ts, thread_ts, user_id, text, reply_count, flags, more, version, deleted"
_UPSERT = (
    "INSERT INTO messages (chan, ts_key, ts, thread_key, thread_ts, user_id, text, reply_count, "
    "flags, more, version, deleted, doc) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
    f"CASE WHEN %s THEN NULL ELSE to_tsvector('{TS_CONFIG}', %s) END) "
    "ON CONFLICT (chan, ts_key) DO UPDATE SET ts = excluded.ts, thread_key = excluded.thread_key, "
    "thread_ts = excluded.thread_ts, user_id = excluded.user_id, text = excluded.text, "
    "reply_count = excluded.reply_count, flags = excluded.flags, more = excluded.more, "
    "version = excluded.version, deleted = excluded.deleted, doc = excluded.doc, seq = excluded.seq"
)

_COPY_FROM = 200
_COPY = (
    "COPY incoming (chan, ts_key, ts, thread_key, thread_ts, user_id, text, reply_count, flags, "
    "more, version, deleted, doc) FROM STDIN"
)
_FROM_INCOMING = (
    "INSERT INTO messages (chan, ts_key, ts, thread_key, thread_ts, user_id, text, reply_count, "
    "flags, more, version, deleted, doc) SELECT chan, ts_key, ts, thread_key, thread_ts, user_id, text, "
    "reply_count, flags, more, version, deleted, CASE WHEN deleted THEN NULL ELSE "
    f"to_tsvector('{TS_CONFIG}', doc) END FROM incoming "
    "ON CONFLICT (chan, ts_key) DO UPDATE SET ts = excluded.ts, thread_key = excluded.thread_key, "
    "thread_ts = excluded.thread_ts, user_id = excluded.user_id, text = excluded.text, "
    "reply_count = excluded.reply_count, flags = excluded.flags, more = excluded.more, "
    "version = excluded.version, deleted = excluded.deleted, doc = excluded.doc, seq = excluded.seq"
)


@dataclass(slots=True)
class PgRow(RowMessage):
    deleted: bool


class PgApplier(EventApplier[PgRow]):
    """Applies one batch on ``conn`` inside the transaction the caller opened (the decisions
    are :class:`EventApplier`'s; the row reads and held-back writes are kept here)."""

    def __init__(self, conn: Conn, horizon: int | None) -> None:
        self.conn = conn
        self.horizon = horizon  # ts keys below it are older than the retention period
        self._channels: dict[tuple[str, str], tuple[int, int | None]] = {}
        self._rows: dict[tuple[int, int], PgRow | None] = {}
        # Row writes not sent yet: sent together (executemany) before any other statement
        # and at the end of the batch, a few round trips for thousands of rows.
        self._pending: dict[tuple[int, int], tuple[object, ...]] = {}
        # A channel's rows were deleted: a channel whose rows all predate schema 2 (no seq)
        # keeps its search version through that, so the batch counts as a removal.
        self.forgot = False

    def flush(self) -> None:
        """Send the buffered row writes (before the batch commits)."""
        if self._pending:
            rows = list(self._pending.values())
            self._pending.clear()
            if len(rows) < _COPY_FROM:
                with self.conn.cursor() as cursor:
                    cursor.executemany(_UPSERT, rows)
                return
            # Many rows: COPY them into a temporary table, then one upsert from it.
            self.conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS incoming (chan bigint, ts_key bigint, ts text, "
                "thread_key bigint, thread_ts text, user_id text, text text, reply_count integer, "
                "flags integer, more text, version bigint, deleted boolean, doc text) "
                "ON COMMIT DELETE ROWS"
            )
            with self.conn.cursor() as cursor:
                with cursor.copy(_COPY) as copy:
                    for row in rows:
                        copy.write_row(row[:12] + row[13:])
                cursor.execute(_FROM_INCOMING)

    def _sql(self, query: str, args: Sequence[object] = ()) -> psycopg.Cursor[TupleRow]:
        self.flush()
        return self.conn.execute(query.encode(), args)

    def _run(self, query: str, args: Sequence[object]) -> None:
        self._sql(pyformat(query), args)

    def load(self, chan: int, keys: Sequence[int]) -> dict[int, PgRow]:
        """The stored rows among ``keys`` of the channel, by key, in one query (remembered
        for the batch's per-event rule)."""
        if not keys:
            return {}
        rows = self._sql(
            f"SELECT ts_key, {_COLUMNS} FROM messages WHERE chan = %s AND ts_key = ANY(%s)",
            (chan, sorted(keys)),
        ).fetchall()
        found = {int(row[0]): PgRow(*row[1:]) for row in rows}
        for key in keys:
            self._rows[(chan, key)] = found.get(key)
        return found

    def queue_row(self, chan: int, row: MessageRow, doc: str) -> None:
        """Send a new live row (``doc``: its full-text document) with the batch's writes."""
        key = row[0]
        self._pending.pop((chan, key), None)
        self._pending[(chan, key)] = (chan, *row[:10], False, False, doc)
        self._rows[(chan, key)] = PgRow(
            row[1], row[3], row[4], row[5], row[6], row[7], row[8], row[9], False
        )

    def prefetch(self, events: Sequence[StoreEvent]) -> None:
        """Read the stored rows every post of the batch touches (one query a channel)."""
        wanted: dict[tuple[str, str], set[int]] = {}
        for event in events:
            if isinstance(event, MessagePosted):
                key = ts_key(event.message.ts)
                wanted.setdefault((event.team, event.message.channel), set()).add(key)
        for (team, channel), keys in wanted.items():
            chan, _ = self.channel(team, channel)
            self.load(chan, list(keys))

    # -- channels and rows --------------------------------------------------------------------

    def channel(self, team: str, channel: str) -> tuple[int, int | None]:
        """(channel id, erased_through) of ``team``/``channel``, created when new."""
        found = self._channels.get((team, channel))
        if found is not None:
            return found
        self._sql(
            "INSERT INTO channels (team, channel) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (team, channel),
        )
        row = self._sql(
            "SELECT id, erased_through FROM channels WHERE team = %s AND channel = %s",
            (team, channel),
        ).fetchone()
        assert row is not None
        through = None if row[1] is None else int(row[1])
        found = self._channels[(team, channel)] = (int(row[0]), through)
        return found

    def _row(self, chan: int, key: int) -> PgRow | None:
        if (chan, key) in self._rows:
            return self._rows[(chan, key)]
        found = self._sql(
            f"SELECT {_COLUMNS} FROM messages WHERE chan = %s AND ts_key = %s", (chan, key)
        ).fetchone()
        row = self._rows[(chan, key)] = None if found is None else PgRow(*found)
        return row

    def _insert_new(self, chan: int, message: Message) -> bool:
        if self._row(chan, ts_key(message.ts)) is not None:
            return False
        self._write(chan, message, None)
        return True

    def _mark_erased(self, old: PgRow, result: WriteResult) -> None:
        """The row's ``doc`` column was rewritten with it: only the caller needs to know."""
        result.erased = True

    def _uncount_reply(self, chan: int, root: int) -> None:
        super()._uncount_reply(chan, root)
        self._rows.pop((chan, root), None)  # read again when touched

    def _write(self, chan: int, message: Message, old: PgRow | None = None) -> None:
        """Insert or replace the row of ``message`` (its lexemes in the same statement)."""
        key, ts, thread_key, thread_ts, user, text, replies, flags, more, version, deleted = (
            row_from_message(message)
        )
        self._pending.pop((chan, key), None)  # re-inserted last: the newest write wins
        self._pending[(chan, key)] = (
            chan, key, ts, thread_key, thread_ts, user, text, replies, flags, more, version,
            bool(deleted), bool(deleted), document(text, more),
        )  # fmt: skip
        self._rows[(chan, key)] = PgRow(
            ts, thread_ts, user, text, replies, flags, more, version, bool(deleted)
        )

    # -- forgetting ---------------------------------------------------------------------------

    def _forget_channel(self, team: str, channel: str, result: WriteResult) -> None:
        chan, erased_through = self.channel(team, channel)
        newest = self._sql("SELECT max(ts_key) FROM messages WHERE chan = %s", (chan,)).fetchone()
        keys = [int(k) for k in (newest[0] if newest else None, erased_through) if k is not None]
        through = max(keys) if keys else None
        for table in ("messages", "pins", "cursors", "files"):
            self._sql(f"DELETE FROM {table} WHERE chan = %s", (chan,))
        self._sql(
            "UPDATE channels SET name = NULL, erased_through = %s WHERE id = %s", (through, chan)
        )
        self._channels[(team, channel)] = (chan, through)
        self.forgot = True
        for cached in [k for k in self._rows if k[0] == chan]:
            del self._rows[cached]
        result.applied += 1
        result.erased = True

    def _drop_user(self, team: str, user: str) -> list[tuple[str, str]]:
        self._sql("DELETE FROM users WHERE team = %s AND user_id = %s", (team, user))
        owned = self._sql(
            "SELECT c.channel, m.ts FROM messages m JOIN channels c ON c.id = m.chan "
            "WHERE c.team = %s AND m.user_id = %s AND NOT m.deleted",
            (team, user),
        ).fetchall()
        return [(str(channel), str(ts)) for channel, ts in owned]

    # -- the statements spelt for PostgreSQL --------------------------------------------------

    def _name_user(self, team: str, user: str, name: str) -> None:
        self._sql(
            "INSERT INTO users (team, user_id, name) VALUES (%s, %s, %s) "
            "ON CONFLICT (team, user_id) DO UPDATE SET name = excluded.name",
            (team, user, name),
        )

    def _set_pin(self, chan: int, key: int, user: str) -> None:
        self._sql(
            "INSERT INTO pins (chan, ts_key, user_id) VALUES (%s, %s, %s) "
            "ON CONFLICT (chan, ts_key) DO UPDATE SET user_id = excluded.user_id",
            (chan, key, user),
        )

    def _save_file(
        self, team: str, file_id: str, chan: int | None, key: int | None, record: str
    ) -> None:
        self._sql(
            "INSERT INTO files (team, file_id, chan, ts_key, record) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (team, file_id) DO UPDATE SET chan = excluded.chan, "
            "ts_key = excluded.ts_key, record = excluded.record",
            (team, file_id, chan, key, record),
        )

    def _carriers(self, team: str, file_id: str) -> list[tuple[str, int, PgRow]]:
        found = self._sql(
            f"SELECT c.channel, c.id, {', '.join('m.' + c for c in _COLUMNS.split(', '))} "
            "FROM messages m JOIN channels c ON c.id = m.chan "
            "WHERE c.team = %s AND strpos(m.more, %s) > 0",
            (team, json.dumps(file_id)),
        ).fetchall()
        return [(str(channel), int(chan), PgRow(*columns)) for channel, chan, *columns in found]
