"""Posting many messages of one channel at once: the write path of ``chanctx import``.

``post_rows(store, team, channel, rows)`` stores what ``store.write`` would store for the same
``MessagePosted`` events in that order (ts is the key, a tombstone wins, an older copy never
undoes an edit, a root's thread counters are kept from the copy that knows more), in one
transaction, but does the common case of an import in bulk: the batch's stored rows are read in
one query, the rows the store lacks go in with one ``executemany`` into ``messages`` and one
into the full-text index shard they fall in (their documents scoped to the channel, ``_fts``), and a row identical to the stored one is counted as known
without building a message. What is not that simple (a copy differing from the stored row, a
tombstone, a key twice in the batch) goes through the same per-event rule as ``write``.

A batch in ascending key order with no tombstone and nothing stored in its range (an import
of a channel the store lacks) is recognised by tests that run in C and inserted without the
per-row rule. ``checkpoints_aside`` keeps the log's checkpoints off the writer's path while an
import writes.

Rows are built without a pydantic model: :func:`message_row` takes values the caller has
already checked (the import checks Slack's shapes itself and leaves anything unusual to live
intake's models). On PostgreSQL it is the store's own bulk path (one COPY a batch); on any other
store, ``write`` of the same events.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from operator import itemgetter, lt

from chanctx.cache._ts_keys import raw_ts_key
from chanctx.cache.channel_store._apply import _COLUMNS, Applier, _Row
from chanctx.cache.channel_store._fts import (
    SHARD_BITS,
    channel_code,
    index_words,
    scoped_words_sql,
    shard_table,
)
from chanctx.cache.channel_store._protocol import ChannelStore
from chanctx.cache.channel_store._records import MessagePosted, WriteResult
from chanctx.cache.channel_store._rows import (
    MessageRow,
    document,
    message_from_row,
    more_json,
    row_from_message,
)
from chanctx.cache.channel_store._rules import same_copy, sort_posts
from chanctx.cache.channel_store.postgres import PostgresChannelStore
from chanctx.cache.channel_store.sqlite import SqliteChannelStore
from chanctx.context import FileRef, Message

__all__ = [
    "MessageRow",
    "checkpoints_aside",
    "message_row",
    "plain_message_row",
    "plain_reply_row",
    "post_rows",
    "row_message",
    "row_of",
    "row_words",
]

_IS_BOT, _IS_BROADCAST = 1, 16
_KEY = itemgetter(0)
_DELETED = itemgetter(10)
_HELD = "SELECT EXISTS (SELECT 1 FROM messages WHERE chan = ? AND ts_key BETWEEN ? AND ?)"
# The scale of a ts by its count of fractional digits.
_SCALES: tuple[int, ...] = tuple(10**9 // 10**digits for digits in range(10))
# New rows take the next ids (max + 1, ...: SQLite's rowid for a row inserted without one,
# below the largest rowid there is): the writer is alone in its transaction.
_INSERT = (
    "INSERT INTO messages (chan, ts_key, ts, thread_key, thread_ts, user_id, text, "
    "reply_count, flags, more, version, deleted) VALUES ({chan}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def message_row(
    ts: str,
    *,
    thread_ts: str | None = None,
    user_id: str = "",
    text: str = "",
    reply_count: int = 0,
    is_bot: bool = False,
    is_broadcast: bool = False,
    author_name: str | None = None,
    bot_id: str | None = None,
    subtype: str | None = None,
    files: Sequence[FileRef] = (),
    reactions: Sequence[tuple[str, int, Sequence[str]]] = (),
    reply_users: Sequence[str] = (),
    latest_reply: str | None = None,
    edited_ts: str | None = None,
) -> MessageRow:
    """The stored row of the message these values describe, as ``row_of`` gives for the
    equal :class:`Message` (someone else's message: not ours, not mentioning us, not a
    tombstone). The ts values must be valid Slack ts (they are not checked again)."""
    if (
        author_name is None
        and bot_id is None
        and subtype is None
        and latest_reply is None
        and edited_ts is None
        and not (files or reactions or reply_users)
    ):  # most messages and replies: nothing beyond the columns (``more`` stays NULL)
        flags = (_IS_BOT if is_bot else 0) | (_IS_BROADCAST if is_broadcast else 0)
        thread_key = None if thread_ts is None else _key(thread_ts)
        return (_key(ts), ts, thread_key, thread_ts, user_id, text, reply_count, flags, None, 0, 0)
    more = more_json(
        author_name=author_name,
        bot_id=bot_id,
        subtype=subtype,
        files=[ref.model_dump(exclude_defaults=True) for ref in files],
        reactions=reactions,
        reply_users=reply_users,
        latest_reply=latest_reply,
        edited_ts=edited_ts,
    )
    flags = (_IS_BOT if is_bot else 0) | (_IS_BROADCAST if is_broadcast else 0)
    return (
        raw_ts_key(ts),
        ts,
        None if thread_ts is None else raw_ts_key(thread_ts),
        thread_ts,
        user_id,
        text,
        reply_count,
        flags,
        more,
        0 if edited_ts is None else raw_ts_key(edited_ts),
        0,
    )


def plain_message_row(ts: str, user_id: str, text: str) -> MessageRow:
    """``message_row(ts, user_id=user_id, text=text)``, for the message most are: a person's
    text and nothing else (no keywords to pass: a million calls notice)."""
    return (_key(ts), ts, None, None, user_id, text, 0, 0, None, 0, 0)


def plain_reply_row(ts: str, thread_ts: str, user_id: str, text: str) -> MessageRow:
    """``message_row(ts, thread_ts=thread_ts, user_id=user_id, text=text)``: a person's reply
    and nothing else (a fifth of an export's messages)."""
    return (_key(ts), ts, _key(thread_ts), thread_ts, user_id, text, 0, 0, None, 0, 0)


def _key(ts: str) -> int:
    """``raw_ts_key`` with one int() instead of two (same value for every valid ts); Slack's
    usual form (ten digits, a dot, six) with one ``replace``."""
    if len(ts) == 17 and ts[10] == ".":
        return int(ts.replace(".", "")) * 1000
    whole, dot, frac = ts.partition(".")
    return int(whole + frac) * _SCALES[len(frac)] if dot else int(whole) * _SCALES[0]


def row_of(message: Message) -> MessageRow:
    """The stored row of ``message`` (any message, tombstones included)."""
    return row_from_message(message)


def row_words(row: MessageRow) -> str:
    """The ``index_words`` of the row's full-text document (its text, author, file names)."""
    return index_words(row[5] if row[8] is None else document(row[5], row[8]))


def row_message(channel: str, row: MessageRow) -> Message:
    """The message a row of ``channel`` holds (the inverse of :func:`row_of`)."""
    return message_from_row(channel, row[1], row[3], row[4], row[5], row[6], row[7], row[8])


def post_rows(
    store: ChannelStore,
    team: str,
    channel: str,
    rows: Sequence[MessageRow],
    words: Sequence[str] | None = None,
) -> WriteResult:
    """``store.write([MessagePosted(team, m) for m in messages])`` for the messages ``rows``
    hold, in one transaction; on SQLite the new rows go in bulk. ``words``: each row's
    ``index_words`` of its document, when the caller has them already (an import splits them
    in its parsing process); computed here otherwise."""
    if not rows:
        return WriteResult()
    if isinstance(store, SqliteChannelStore):
        return store.transact(
            lambda applier, result: _post(applier, team, channel, rows, words, result)
        )
    if isinstance(store, PostgresChannelStore):
        return store.post_rows(team, channel, rows)
    return store.write([MessagePosted(team, row_message(channel, row)) for row in rows])


def _post(
    applier: Applier,
    team: str,
    channel: str,
    rows: Sequence[MessageRow],
    words: Sequence[str] | None,
    result: WriteResult,
) -> None:
    chan, erased_through = applier.channel(team, channel)
    horizon = applier.horizon
    if _all_new(applier, chan, rows, erased_through, horizon):  # most batches of an import
        _insert(applier, chan, list(rows), words)
        result.applied += len(rows)
        return
    fresh, one_by_one, _ = sort_posts(rows, erased_through, horizon, result)
    stored = _stored(applier, chan, fresh)
    new: list[MessageRow] = [] if stored else list(fresh.values())
    for key, row in fresh.items() if stored else ():
        old = stored.get(key)
        if old is None:
            new.append(row)
        elif old.deleted:
            result.deleted += 1
        elif same_copy(old, row):
            result.known += 1
        else:
            applier.apply(MessagePosted(team, row_message(channel, row)), result)
    if len(new) == len(rows):  # every row new, once (a first import): ``words`` as given
        _insert(applier, chan, new, words)
        result.applied += len(new)
    elif new:
        aligned = None
        if words is not None:  # a key's first copy is the one in ``fresh``: reversed, it wins
            given = dict(zip(map(_KEY, reversed(rows)), reversed(words), strict=True))
            aligned = [given[row[0]] for row in new]
        _insert(applier, chan, new, aligned)
        result.applied += len(new)
    for row in one_by_one:
        applier.apply(MessagePosted(team, row_message(channel, row)), result)


def _insert(
    applier: Applier, chan: int, rows: list[MessageRow], words: Sequence[str] | None
) -> None:
    """New rows, with the next ids, and their scoped documents (``words[i]`` the
    ``index_words`` of ``rows[i]``'s, split here when None) into the shards those ids fall
    in: one executemany into ``messages`` and one a shard (most batches: one shard). The
    channel's code goes in front of each word inside SQLite (``scoped_words_sql``)."""
    db = applier.db
    first = int(db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]) + 1
    db.executemany(_INSERT.format(chan=int(chan)), rows)
    if words is None:
        words = [
            index_words(row[5] if row[8] is None else document(row[5], row[8])) for row in rows
        ]
    scoped = scoped_words_sql(channel_code(chan))
    start, end = first, first + len(rows)
    while start < end:
        shard = start >> SHARD_BITS
        stop = min(end, (shard + 1) << SHARD_BITS)
        applier.note_shard(chan, shard)
        db.executemany(
            f"INSERT INTO {shard_table(shard)} (rowid, doc) VALUES (?1, {scoped})",
            zip(range(start, stop), words[start - first : stop - first], strict=True),
        )
        start = stop


def _all_new(
    applier: Applier,
    chan: int,
    rows: Sequence[MessageRow],
    erased_through: int | None,
    horizon: int | None,
) -> bool:
    """True when every row is to be inserted as it is: keys strictly ascending (none twice),
    no tombstone, none forgotten or past retention, and nothing stored between the first
    and the last key. The tests run in C (``map``), so a batch of an import in order costs
    no Python a row before its insert; any other batch takes ``sort_posts``' rule."""
    keys = list(map(_KEY, rows))
    low, high = keys[0], keys[-1]
    return (
        (erased_through is None or low > erased_through)
        and (horizon is None or low >= horizon)
        and all(map(lt, keys, islice(keys, 1, None)))
        and not any(map(_DELETED, rows))
        and not applier.db.execute(_HELD, (chan, low, high)).fetchone()[0]
    )


def _stored(applier: Applier, chan: int, fresh: dict[int, MessageRow]) -> dict[int, _Row]:
    """The stored rows among ``fresh``'s keys, by key, in one query; none asked for when the
    channel holds nothing in their range (a first import: most batches)."""
    if not fresh:
        return {}
    db = applier.db
    held = db.execute(_HELD, (chan, min(fresh), max(fresh))).fetchone()[0]
    if not held:
        return {}
    keys = list(fresh)
    found = db.execute(
        f"SELECT ts_key, {_COLUMNS} FROM messages "
        "WHERE chan = ? AND ts_key IN (SELECT value FROM json_each(?))",
        (chan, json.dumps(keys)),
    ).fetchall()
    return {key: _Row(*columns) for key, *columns in found}


@contextmanager
def checkpoints_aside(store: ChannelStore, every: float = 0.25) -> Iterator[None]:
    """While it is open, the SQLite store's log is checkpointed by a thread of its own
    (``PRAGMA wal_checkpoint(PASSIVE)`` on a second connection, at most every ``every``
    seconds) instead of by the writer's commits: a checkpoint's copying and its two
    ``fdatasync``s then wait beside the writer, not in its way (measured at 200,000 messages
    of an import: 57 of them, 0.7 s the writer waited). A checkpoint never blocks the writer
    in WAL mode; the log stays as short as the thread keeps up with, and what it holds is as
    durable as before (a kill leaves the log for the next open to recover). Nothing on any
    other store."""
    if not isinstance(store, SqliteChannelStore):
        yield
        return
    store.transact(lambda applier, _: _autocheckpoint(applier.db, 0))
    stop = threading.Event()
    thread = threading.Thread(target=_checkpointer, args=(store, stop, every), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        store.transact(lambda applier, _: _autocheckpoint(applier.db, 1000))  # SQLite's own


def _autocheckpoint(db: sqlite3.Connection, pages: int) -> None:
    db.execute(f"PRAGMA wal_autocheckpoint = {int(pages)}")


def _checkpointer(store: SqliteChannelStore, stop: threading.Event, every: float) -> None:
    db = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA busy_timeout = 5000")
        while not stop.wait(every):
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:  # the writer's commits checkpoint again once this ends
        pass
    finally:
        db.close()
