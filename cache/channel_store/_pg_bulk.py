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

from chanctx.cache.channel_store._pg_apply import PgApplier
from chanctx.cache.channel_store._records import MessagePosted, WriteResult
from chanctx.cache.channel_store._rows import MessageRow, document, message_from_row
from chanctx.cache.channel_store._rules import same_copy, sort_posts
from chanctx.context import Message

__all__ = ["post_bulk"]


def post_bulk(
    applier: PgApplier, team: str, channel: str, rows: Sequence[MessageRow], result: WriteResult
) -> None:
    """Apply the posts ``rows`` hold inside the applier's transaction (the caller flushes)."""
    chan, erased_through = applier.channel(team, channel)
    horizon = applier.horizon
    fresh, one_by_one, slow_keys = sort_posts(rows, erased_through, horizon, result)
    stored = applier.load(chan, [*fresh, *slow_keys])
    for key, row in fresh.items():
        old = stored.get(key)
        if old is None:
            doc = row[5] if row[8] is None else document(row[5], row[8])
            applier.queue_row(chan, row, doc)
            result.applied += 1
        elif old.deleted:
            result.deleted += 1
        elif same_copy(old, row):
            result.known += 1
        else:
            applier.apply(MessagePosted(team, _message(channel, row)), result)
    for row in one_by_one:
        applier.apply(MessagePosted(team, _message(channel, row)), result)


def _message(channel: str, row: MessageRow) -> Message:
    return message_from_row(channel, row[1], row[3], row[4], row[5], row[6], row[7], row[8])
