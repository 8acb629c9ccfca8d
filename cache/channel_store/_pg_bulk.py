"""Posting many messages of one channel at once on PostgreSQL: the bulk path of an import.

What ``write`` of the same ``MessagePosted`` events stores, decided the way ``bulk.post_rows``
decides it on SQLite: the batch's stored rows are read in one query, the rows the store lacks
are sent with one COPY (their lexemes computed by the server in the statement that moves them
into ``messages``), a row equal to the stored one counts as known, and anything else (a copy
differing from the stored row, a tombstone, a key twice in the batch) goes through the applier's
per-event rule. No :class:`~chanctx.context.Message` is built for the common row.
"""

from __future__ import annotations

from collections.abc import Sequence

from chanctx.cache.channel_store._pg_apply import PgApplier, PgRow
from chanctx.cache.channel_store._records import MessagePosted, WriteResult
from chanctx.cache.channel_store._rows import MessageRow, document, message_from_row
from chanctx.context import Message

__all__ = ["post_bulk"]


def post_bulk(
    applier: PgApplier, team: str, channel: str, rows: Sequence[MessageRow], result: WriteResult
) -> None:
    """Apply the posts ``rows`` hold inside the applier's transaction (the caller flushes)."""
    chan, erased_through = applier.channel(team, channel)
    horizon = applier.horizon
    fresh: dict[int, MessageRow] = {}  # first copy of each key: the bulk candidates
    one_by_one: list[MessageRow] = []  # the rest, in order, through the per-event rule
    slow_keys: set[int] = set()
    for row in rows:
        key = row[0]
        if row[10] or key in fresh or key in slow_keys:
            one_by_one.append(row)  # a tombstone, or a key seen before: order matters
            slow_keys.add(key)
        elif erased_through is not None and key <= erased_through:
            result.deleted += 1
        elif horizon is not None and key < horizon:
            result.expired += 1
        else:
            fresh[key] = row
    stored = applier.load(chan, [*fresh, *slow_keys])
    for key, row in fresh.items():
        old = stored.get(key)
        if old is None:
            doc = row[5] if row[8] is None else document(row[5], row[8])
            applier.queue_row(chan, row, doc)
            result.applied += 1
        elif old.deleted:
            result.deleted += 1
        elif _same(old, row):
            result.known += 1
        else:
            applier.apply(MessagePosted(team, _message(channel, row)), result)
    for row in one_by_one:
        applier.apply(MessagePosted(team, _message(channel, row)), result)


def _message(channel: str, row: MessageRow) -> Message:
    return message_from_row(channel, row[1], row[3], row[4], row[5], row[6], row[7], row[8])


def _same(old: PgRow, row: MessageRow) -> bool:
    """The stored row already holds exactly this copy (so the rule says "known")."""
    return (
        old.ts == row[1]
        and old.thread_ts == row[3]
        and old.user_id == row[4]
        and old.text == row[5]
        and old.reply_count == row[6]
        and old.flags == row[7]
        and old.more == row[8]
        and old.version == row[9]
    )
