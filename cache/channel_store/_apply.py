"""Applying a batch of events inside the writer's transaction (see ``_records`` for the rules).

Each method reads the row it changes, decides by the idempotency rule, writes the row and keeps
the contentless full-text index in step (an index entry is deleted with the exact scoped
document it was inserted with, recomputed from the old row; see ``_fts``). Anything that removes
text marks the shard that held it ``pending``: the shard still holds the old terms until the
erase pass merges them away.

With a ``mark`` (a store that indexes after the commit, ``_deferred_index``) only the rows at or
below it are indexed: a row above it is written alone, whatever happens to it, and its words are
read from it when its indexing batch comes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from chanctx.cache.channel_store._apply_events import EventApplier, RowMessage
from chanctx.cache.channel_store._fts import (
    SHARD_BITS,
    channel_code,
    ensure_shard,
    known_shards,
    scoped_document,
    shard_table,
)
from chanctx.cache.channel_store._records import WriteResult
from chanctx.cache.channel_store._rows import document, row_from_message
from chanctx.context import Message

__all__ = ["Applier"]

_COLUMNS = "ts, thread_ts, user_id, text, reply_count, flags, more, version, deleted, id"
_DELETED_FLAG = 8
_INSERT = (
    "INSERT INTO messages (chan, ts_key, ts, thread_key, thread_ts, user_id, text, "
    "reply_count, flags, more, version, deleted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(slots=True)
class _Row(RowMessage):
    deleted: int
    id: int


class Applier(EventApplier[_Row]):
    """Applies events on ``db`` (inside a transaction the caller opened); the decisions are
    :class:`EventApplier`'s, the rows and their full-text shards are kept here."""

    def __init__(self, db: sqlite3.Connection, *, horizon: int | None = None) -> None:
        self.db = db
        self.horizon = horizon  # ts keys below it are older than the retention period
        # Rows above it are not indexed (None: every row is, each write keeps it so).
        self.mark: int | None = None
        self.newest = 0  # the largest row id this applier inserted
        self._channels: dict[tuple[str, str], tuple[int, int | None]] = {}
        self._shards: set[int] | None = None  # the shards that exist
        self._chan_shards: set[tuple[int, int]] = set()  # (channel, shard) rows known written
        self._codes: dict[int, str] = {}  # channel id -> its term code (see _fts)
        self.touched: set[int] = set()  # channels named since take_touched (search's row cache)
        # A channel's rows were deleted since take_rows_removed: their row ids may come back
        # for other messages, so what search remembers of any row's ts is stale.
        self.rows_removed = False

    def forget_cache(self) -> None:
        """Drop the caches (after a rollback they may name rows that are gone)."""
        self._channels.clear()
        self._shards = None
        self._chan_shards.clear()
        self._codes.clear()
        self.rows_removed = False

    def shards(self) -> set[int]:
        """The shards that exist (read once, then kept in step by :meth:`index`)."""
        if self._shards is None:
            self._shards = known_shards(self.db)
        return self._shards

    def note_shard(self, chan: int, shard: int) -> None:
        """Make sure ``shard`` exists and is listed as one ``chan`` has words in."""
        if (chan, shard) in self._chan_shards:
            return
        ensure_shard(self.db, self.shards(), shard)
        self.db.execute(
            "INSERT OR IGNORE INTO chan_shards (chan, shard) VALUES (?, ?)", (chan, shard)
        )
        self._chan_shards.add((chan, shard))

    def take_touched(self) -> set[int]:
        """The channels named since the last call (every write to a channel names it here)."""
        touched, self.touched = self.touched, set()
        return touched

    def take_rows_removed(self) -> bool:
        """Whether rows were deleted since the last call (an erased channel's)."""
        removed, self.rows_removed = self.rows_removed, False
        return removed

    # -- channels -----------------------------------------------------------------------------

    def channel(self, team: str, channel: str) -> tuple[int, int | None]:
        """(channel id, erased_through) of ``team``/``channel``, created when new."""
        found = self._channels.get((team, channel))
        if found is not None:
            self.touched.add(found[0])
            return found
        row = self.db.execute(
            "SELECT id, erased_through FROM channels WHERE team = ? AND channel = ?",
            (team, channel),
        ).fetchone()
        if row is None:
            cursor = self.db.execute(
                "INSERT INTO channels (team, channel) VALUES (?, ?)", (team, channel)
            )
            assert cursor.lastrowid is not None
            row = (cursor.lastrowid, None)
        found = self._channels[(team, channel)] = (int(row[0]), row[1])
        self.touched.add(found[0])
        return found

    def _run(self, query: str, args: Sequence[object]) -> None:
        self.db.execute(query, args)

    def _mark_erased(self, old: _Row, result: WriteResult) -> None:
        """The index shard of row ``old`` held words now erased: the erase pass merges it."""
        if self._indexed(old.id):
            self.db.execute("UPDATE shards SET pending = 1 WHERE id = ?", (old.id >> SHARD_BITS,))
        result.erased = True

    def _indexed(self, row_id: int) -> bool:
        """Whether row ``row_id``'s words belong in the index now (when it is live)."""
        return self.mark is None or row_id <= self.mark

    # -- rows ---------------------------------------------------------------------------------

    def _row(self, chan: int, key: int) -> _Row | None:
        found = self.db.execute(
            f"SELECT {_COLUMNS} FROM messages WHERE chan = ? AND ts_key = ?", (chan, key)
        ).fetchone()
        return None if found is None else _Row(*found)

    def _index(self, chan: int, row_id: int, text: str, more: str | None) -> None:
        shard = row_id >> SHARD_BITS
        self.note_shard(chan, shard)
        code = self._codes.get(chan)
        if code is None:
            code = self._codes[chan] = channel_code(chan)
        self.db.execute(
            f"INSERT INTO {shard_table(shard)} (rowid, doc) VALUES (?, ?)",
            (row_id, scoped_document(code, text, more)),
        )

    def _unindex(self, chan: int, row: _Row) -> None:
        if self._indexed(row.id):
            unindex(self.db, chan, row.id, row.text, row.more)

    def _inserted(self, row_id: int | None) -> int:
        assert row_id is not None
        if row_id > self.newest:
            self.newest = row_id
        return row_id

    def _insert_new(self, chan: int, message: Message) -> bool:
        """Insert ``message`` (not deleted) unless its key is taken: whether it was. A new
        message is the common case, so it costs one statement, not a read and a write."""
        row = row_from_message(message)
        cursor = self.db.execute(_INSERT + " ON CONFLICT (chan, ts_key) DO NOTHING", (chan, *row))
        if cursor.rowcount == 0:
            return False
        row_id = self._inserted(cursor.lastrowid)
        if self._indexed(row_id):
            self._index(chan, row_id, row[5], row[8])
        return True

    def _write(self, chan: int, message: Message, old: _Row | None) -> int:
        """Insert ``message`` or replace ``old`` with it; its row id. Index kept in step."""
        key, ts, thread_key, thread_ts, user, text, replies, flags, more, version, deleted = (
            row_from_message(message)
        )
        if old is None:
            cursor = self.db.execute(
                _INSERT,
                (
                    chan,
                    key,
                    ts,
                    thread_key,
                    thread_ts,
                    user,
                    text,
                    replies,
                    flags,
                    more,
                    version,
                    deleted,
                ),
            )
            row_id = self._inserted(cursor.lastrowid)
            if not deleted and self._indexed(row_id):
                self._index(chan, row_id, text, more)
            return row_id
        same_document = document(text, more) == document(old.text, old.more)
        if not old.deleted and (deleted or not same_document):
            self._unindex(chan, old)
        self.db.execute(
            "UPDATE messages SET ts = ?, thread_key = ?, thread_ts = ?, user_id = ?, text = ?, "
            "reply_count = ?, flags = ?, more = ?, version = ?, deleted = ? WHERE id = ?",
            (ts, thread_key, thread_ts, user, text, replies, flags, more, version, deleted, old.id),
        )
        if not deleted and (old.deleted or not same_document) and self._indexed(old.id):
            self._index(chan, old.id, text, more)
        return old.id

    # -- forgetting ---------------------------------------------------------------------------

    def _forget_channel(self, team: str, channel: str, result: WriteResult) -> None:
        chan, erased_through = self.channel(team, channel)
        self.rows_removed = True
        newest = self.db.execute(
            "SELECT max(ts_key) FROM messages WHERE chan = ?", (chan,)
        ).fetchone()[0]
        through = max(k for k in (newest, erased_through, -1) if k is not None)
        # Each indexed message leaves its shard (a 'delete' marker; the erase pass then merges
        # the shards it touched, so the words leave the file's bytes too).
        live = self.db.execute(
            "SELECT id, text, more FROM messages WHERE chan = ? AND deleted = 0 AND id <= ?",
            (chan, (1 << 63) - 1 if self.mark is None else self.mark),
        ).fetchall()
        for row_id, text, more in live:
            unindex(self.db, chan, row_id, text, more)
        for table in ("messages", "pins", "cursors", "chan_shards"):
            self.db.execute(f"DELETE FROM {table} WHERE chan = ?", (chan,))
        self._chan_shards = {pair for pair in self._chan_shards if pair[0] != chan}
        self.db.execute("DELETE FROM files WHERE chan = ?", (chan,))
        through_key = through if through >= 0 else None
        self.db.execute(
            "UPDATE channels SET name = NULL, erased_through = ? WHERE id = ?",
            (through_key, chan),
        )
        self._channels[(team, channel)] = (chan, through_key)
        result.applied += 1
        result.erased = True

    def _drop_user(self, team: str, user: str) -> list[tuple[str, str]]:
        self.db.execute("DELETE FROM users WHERE team = ? AND user = ?", (team, user))
        owned: list[tuple[str, str]] = self.db.execute(
            "SELECT c.channel, m.ts FROM messages m JOIN channels c ON c.id = m.chan "
            "WHERE c.team = ? AND m.user_id = ? AND m.deleted = 0",
            (team, user),
        ).fetchall()
        return owned

    # -- the statements spelt for SQLite ------------------------------------------------------

    def _name_user(self, team: str, user: str, name: str) -> None:
        self.db.execute(
            "INSERT INTO users (team, user, name) VALUES (?, ?, ?) "
            "ON CONFLICT (team, user) DO UPDATE SET name = excluded.name",
            (team, user, name),
        )

    def _set_pin(self, chan: int, key: int, user: str) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO pins (chan, ts_key, user) VALUES (?, ?, ?)", (chan, key, user)
        )

    def _save_file(
        self, team: str, file_id: str, chan: int | None, key: int | None, record: str
    ) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO files (team, file_id, chan, ts_key, record) "
            "VALUES (?, ?, ?, ?, ?)",
            (team, file_id, chan, key, record),
        )

    def _carriers(self, team: str, file_id: str) -> list[tuple[str, int, _Row]]:
        found = self.db.execute(
            f"SELECT c.channel, c.id, {', '.join('m.' + c for c in _COLUMNS.split(', '))} "
            "FROM messages m JOIN channels c ON c.id = m.chan "
            "WHERE c.team = ? AND m.more LIKE ? ESCAPE '\\'",
            (team, "%" + _like(json.dumps(file_id)) + "%"),
        ).fetchall()
        carriers = [(channel, chan, _Row(*columns)) for channel, chan, *columns in found]
        self.touched.update(chan for _, chan, _ in carriers)
        return carriers


def unindex(db: sqlite3.Connection, chan: int, row_id: int, text: str, more: str | None) -> None:
    """Take row ``row_id``'s document out of its shard and mark the shard ``pending``."""
    shard = row_id >> SHARD_BITS
    table = shard_table(shard)
    db.execute(
        f"INSERT INTO {table} ({table}, rowid, doc) VALUES ('delete', ?, ?)",
        (row_id, scoped_document(channel_code(chan), text, more)),
    )
    db.execute("UPDATE shards SET pending = 1 WHERE id = ?", (shard,))


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
