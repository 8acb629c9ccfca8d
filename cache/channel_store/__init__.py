"""The durable channel store: every message, reply, edit, deletion, reaction, pin, file record
and name the bot receives, for every workspace, on disk before the event is acknowledged.

``ChannelStore`` is the interface; ``SqliteChannelStore`` the embedded backend (one SQLite file
in the data dir, WAL). ``GroupCommitter`` batches many callers' events into one commit; ``post_rows`` (module
``bulk``) posts many messages of a channel at once, for imports. The
events and records are in ``_records``; the rules (ts is the key, tombstones win, an older copy
never undoes an edit) are in its docstring. docs/store.md says how the bot uses it.
"""

from __future__ import annotations

from chanctx.cache.channel_store._errors import (
    StoreCorrupt,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreTooNew,
)
from chanctx.cache.channel_store._fts import index_words
from chanctx.cache.channel_store._group_commit import GroupCommitter, PartOutcomes, write_parts
from chanctx.cache.channel_store._protocol import ChannelStore
from chanctx.cache.channel_store._records import (
    BackfillCursor,
    Candidate,
    ChannelForgotten,
    ChannelKey,
    ChannelNamed,
    ChannelStats,
    CursorSaved,
    FileDeleted,
    FileShared,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PinChanged,
    ReactionChanged,
    StoreEvent,
    StoreStats,
    UserForgotten,
    UserNamed,
    WriteResult,
)
from chanctx.cache.channel_store._schema import SCHEMA_VERSION
from chanctx.cache.channel_store.bulk import (
    MessageRow,
    message_row,
    plain_message_row,
    plain_reply_row,
    post_rows,
    row_message,
    row_of,
    row_words,
)
from chanctx.cache.channel_store.postgres import PostgresChannelStore, StoreUnavailable
from chanctx.cache.channel_store.sqlite import DB_NAME, SqliteChannelStore

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "BackfillCursor",
    "Candidate",
    "ChannelForgotten",
    "ChannelKey",
    "ChannelNamed",
    "ChannelStats",
    "ChannelStore",
    "CursorSaved",
    "FileDeleted",
    "FileShared",
    "GroupCommitter",
    "MessageDeleted",
    "MessageEdited",
    "MessagePosted",
    "MessageRow",
    "PartOutcomes",
    "PinChanged",
    "PostgresChannelStore",
    "ReactionChanged",
    "SqliteChannelStore",
    "StoreCorrupt",
    "StoreError",
    "StoreEvent",
    "StoreFull",
    "StoreLocked",
    "StoreStats",
    "StoreTooNew",
    "StoreUnavailable",
    "UserForgotten",
    "UserNamed",
    "WriteResult",
    "index_words",
    "message_row",
    "plain_message_row",
    "plain_reply_row",
    "post_rows",
    "row_message",
    "row_of",
    "row_words",
    "write_parts",
]
