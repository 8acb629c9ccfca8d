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
from chanctx.cache.channel_store._pg_schema import TS_CONFIG
from chanctx.cache.channel_store._records import (
    ChannelForgotten,
    ChannelNamed,
    CursorSaved,
    FileDeleted,
    FileShared,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PinChanged,
    ReactionChanged,
    StoreEvent,
    UserForgotten,
    UserNamed,
    WriteResult,
)
from chanctx.cache.channel_store._rows import (
    MessageRow,
    document,
    message_from_row,
    row_from_message,
)
from chanctx.cache.channel_store._rules import edited, posted_over, reacted_row, tally
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
    "version = excluded.version, deleted = excluded.deleted, doc = excluded.doc"
)

_COPY_FROM = 200
_COPY = (
    "COPY incoming (chan, ts_key, ts, thread_key, thread_ts, user_id, text, reply_count, flags, "
    "more, version, deleted, doc) FROM STDIN"
)
_FROM_INCOMING = (
    "INSERT INTO messages SELECT chan, ts_key, ts, thread_key, thread_ts, user_id, text, "
    "reply_count, flags, more, version, deleted, CASE WHEN deleted THEN NULL ELSE "
    f"to_tsvector('{TS_CONFIG}', doc) END FROM incoming "
    "ON CONFLICT (chan, ts_key) DO UPDATE SET ts = excluded.ts, thread_key = excluded.thread_key, "
    "thread_ts = excluded.thread_ts, user_id = excluded.user_id, text = excluded.text, "
    "reply_count = excluded.reply_count, flags = excluded.flags, more = excluded.more, "
    "version = excluded.version, deleted = excluded.deleted, doc = excluded.doc"
)


@dataclass(slots=True)
class PgRow:
    ts: str
    thread_ts: str | None
    user_id: str
    text: str
    reply_count: int
    flags: int
    more: str | None
    version: int
    deleted: bool

    def message(self, channel: str) -> Message:
        return message_from_row(
            channel,
            self.ts,
            self.thread_ts,
            self.user_id,
            self.text,
            self.reply_count,
            self.flags,
            self.more,
        )


class PgApplier:
    """Applies one batch on ``conn`` inside the transaction the caller opened."""

    def __init__(self, conn: Conn, horizon: int | None) -> None:
        self.conn = conn
        self.horizon = horizon  # ts keys below it are older than the retention period
        self._channels: dict[tuple[str, str], tuple[int, int | None]] = {}
        self._rows: dict[tuple[int, int], PgRow | None] = {}
        # Row writes not sent yet: sent together (executemany) before any other statement
        # and at the end of the batch, a few round trips for thousands of rows.
        self._pending: dict[tuple[int, int], tuple[object, ...]] = {}

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
            rows = self._sql(
                f"SELECT ts_key, {_COLUMNS} FROM messages WHERE chan = %s AND ts_key = ANY(%s)",
                (chan, sorted(keys)),
            ).fetchall()
            for key in keys:
                self._rows[(chan, key)] = None
            for found in rows:
                self._rows[(chan, int(found[0]))] = PgRow(*found[1:])

    def apply(self, event: StoreEvent, result: WriteResult) -> None:
        match event:
            case MessagePosted():
                self._post(event.team, event.message, result)
            case MessageEdited():
                self._edit(event, result)
            case MessageDeleted():
                self._delete(event.team, event.channel, event.ts, result)
            case ReactionChanged():
                self._react(event, result)
            case PinChanged():
                self._pin(event, result)
            case FileShared():
                self._file_shared(event, result)
            case FileDeleted():
                self._file_deleted(event, result)
            case ChannelNamed():
                chan, _ = self.channel(event.team, event.channel)
                self._sql("UPDATE channels SET name = %s WHERE id = %s", (event.name, chan))
                result.applied += 1
            case UserNamed():
                self._sql(
                    "INSERT INTO users (team, user_id, name) VALUES (%s, %s, %s) "
                    "ON CONFLICT (team, user_id) DO UPDATE SET name = excluded.name",
                    (event.team, event.user, event.name),
                )
                result.applied += 1
            case ChannelForgotten():
                self._forget_channel(event.team, event.channel, result)
            case UserForgotten():
                self._forget_user(event.team, event.user, result)
            case CursorSaved():
                chan, _ = self.channel(event.team, event.channel)
                self._sql(
                    "INSERT INTO cursors (chan, kind, cursor) VALUES (%s, %s, %s) "
                    "ON CONFLICT (chan, kind) DO UPDATE SET cursor = excluded.cursor",
                    (chan, event.kind, event.cursor.model_dump_json()),
                )
                result.applied += 1

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

    def _write(self, chan: int, message: Message) -> None:
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

    # -- messages -----------------------------------------------------------------------------

    def _post(self, team: str, message: Message, result: WriteResult) -> None:
        if message.deleted:
            self._delete(team, message.channel, message.ts, result)
            return
        chan, erased_through = self.channel(team, message.channel)
        key = ts_key(message.ts)
        if erased_through is not None and key <= erased_through:
            result.deleted += 1
            return
        if self.horizon is not None and key < self.horizon:
            result.expired += 1
            return
        old = self._row(chan, key)
        if old is None:
            self._write(chan, message)
            result.applied += 1
            return
        posted = posted_over(message, old)
        if posted.message is None:
            if posted.outcome == "deleted":
                result.deleted += 1
            else:
                result.known += 1
            return
        self._write(chan, posted.message)
        if posted.erases:
            result.erased = True
        result.applied += 1

    def _edit(self, event: MessageEdited, result: WriteResult) -> None:
        chan, _ = self.channel(event.team, event.channel)
        old = self._row(chan, ts_key(event.ts))
        after = edited(old, event)
        if isinstance(after, str):
            tally(result, after)
            return
        self._write(chan, after)
        result.erased = True
        result.applied += 1

    def _delete(self, team: str, channel: str, ts: str, result: WriteResult) -> None:
        chan, _ = self.channel(team, channel)
        key = ts_key(ts)
        old = self._row(chan, key)
        if old is not None and old.deleted:
            result.known += 1
            return
        stone = Message.model_construct(channel=channel, ts=ts, deleted=True)
        if old is None:
            self._write(chan, stone)  # remembered, so an older copy cannot return
            result.applied += 1
            return
        before = old.message(channel)
        if before.thread_ts is not None:
            stone = stone.model_copy(
                update={"thread_ts": before.thread_ts, "reply_count": before.reply_count}
            )
        self._write(chan, stone)
        self._sql("DELETE FROM pins WHERE chan = %s AND ts_key = %s", (chan, key))
        if before.is_reply:
            assert before.thread_ts is not None
            root = ts_key(before.thread_ts)
            self._sql(
                "UPDATE messages SET reply_count = reply_count - 1 "
                "WHERE chan = %s AND ts_key = %s AND reply_count > 0",
                (chan, root),
            )
            self._rows.pop((chan, root), None)  # read again when touched
        result.erased = True
        result.applied += 1

    def _react(self, event: ReactionChanged, result: WriteResult) -> None:
        chan, _ = self.channel(event.team, event.channel)
        old = self._row(chan, ts_key(event.ts))
        after = reacted_row(old, event)
        if isinstance(after, str):
            tally(result, after)
            return
        self._write(chan, after)
        result.applied += 1

    def _pin(self, event: PinChanged, result: WriteResult) -> None:
        chan, _ = self.channel(event.team, event.channel)
        key = ts_key(event.ts)
        old = self._row(chan, key)
        if old is None or old.deleted:
            result.unknown += 1
            return
        if event.pinned:
            self._sql(
                "INSERT INTO pins (chan, ts_key, user_id) VALUES (%s, %s, %s) "
                "ON CONFLICT (chan, ts_key) DO UPDATE SET user_id = excluded.user_id",
                (chan, key, event.user),
            )
        else:
            self._sql("DELETE FROM pins WHERE chan = %s AND ts_key = %s", (chan, key))
        result.applied += 1

    def _file_shared(self, event: FileShared, result: WriteResult) -> None:
        chan = key = None
        if event.channel is not None:
            chan, _ = self.channel(event.team, event.channel)
            key = None if event.ts is None else ts_key(event.ts)
        self._sql(
            "INSERT INTO files (team, file_id, chan, ts_key, record) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (team, file_id) DO UPDATE SET chan = excluded.chan, "
            "ts_key = excluded.ts_key, record = excluded.record",
            (event.team, event.file.artifact_id, chan, key, event.file.model_dump_json()),
        )
        result.applied += 1

    def _file_deleted(self, event: FileDeleted, result: WriteResult) -> None:
        self._sql("DELETE FROM files WHERE team = %s AND file_id = %s", (event.team, event.file_id))
        needle = json.dumps(event.file_id)
        carriers = self._sql(
            f"SELECT c.channel, c.id, m.ts_key, {', '.join('m.' + c for c in _COLUMNS.split(', '))} "
            "FROM messages m JOIN channels c ON c.id = m.chan "
            "WHERE c.team = %s AND strpos(m.more, %s) > 0",
            (event.team, needle),
        ).fetchall()
        for channel, chan, _key, *columns in carriers:
            old = PgRow(*columns)
            before = old.message(str(channel))
            kept = tuple(f for f in before.files if f.artifact_id != event.file_id)
            if kept != before.files:
                self._write(int(chan), before.model_copy(update={"files": kept}))
                result.erased = True
        result.applied += 1

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
        for cached in [k for k in self._rows if k[0] == chan]:
            del self._rows[cached]
        result.applied += 1
        result.erased = True

    def _forget_user(self, team: str, user: str, result: WriteResult) -> None:
        self._sql("DELETE FROM users WHERE team = %s AND user_id = %s", (team, user))
        owned = self._sql(
            "SELECT c.channel, m.ts FROM messages m JOIN channels c ON c.id = m.chan "
            "WHERE c.team = %s AND m.user_id = %s AND NOT m.deleted",
            (team, user),
        ).fetchall()
        ignored = WriteResult()
        for channel, ts in owned:
            self._delete(team, str(channel), str(ts), ignored)
        result.applied += 1
        result.erased = True
