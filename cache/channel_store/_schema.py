"""The store's schema, its version, and the checks a file passes before it is used.

``PRAGMA user_version`` holds the schema version and ``PRAGMA application_id`` marks the file as
a chanctx channel store. Opening a file:

* new (no tables): the schema is created at :data:`SCHEMA_VERSION`;
* an older version: each migration in :data:`MIGRATIONS` runs in one transaction, in order;
* a newer version: :class:`StoreTooNew`; another application's database, a file that is not a
  database, or one shorter than its header says (truncated): :class:`StoreCorrupt`.

The full-text index is a few FTS5 tables shared by every channel (``_fts``: shards by row id,
channel-scoped terms), so the schema does not grow with the channels: a new connection parses
a few dozen rows, and a new channel changes no schema. Version 1 kept one FTS5 table per
channel (``fts_<channel id>``); :func:`_v1_to_v2` moves such a store to the shards. Version 3
may leave the newest messages out of the index for a while (``_deferred_index``: the
``indexed_through`` row of ``meta`` says how far it goes), which a chanctx that knows only
version 2 would not see; its migration changes no row, since a version 2 store has every
message indexed, which is what no mark says.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from chanctx.cache.channel_store._errors import StoreCorrupt, StoreTooNew
from chanctx.cache.channel_store._fts import reindex_all

__all__ = [
    "APPLICATION_ID",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "check_header",
    "prepare",
]

APPLICATION_ID = 0x63637331  # "ccs1": a chanctx channel store
SCHEMA_VERSION = 3
_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE channels (
    id INTEGER PRIMARY KEY,
    team TEXT NOT NULL,
    channel TEXT NOT NULL,
    name TEXT,
    erased_through INTEGER,       -- forgotten: no ts key at or below this is accepted again
    UNIQUE (team, channel)
);
CREATE TABLE users (
    team TEXT NOT NULL,
    user TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (team, user)
) WITHOUT ROWID;
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,       -- the rowid of the message in its shard (id >> SHARD_BITS)
    chan INTEGER NOT NULL,
    ts_key INTEGER NOT NULL,      -- the exact ts as an int (ns): the order and the key
    ts TEXT NOT NULL,
    thread_key INTEGER,           -- the root's ts key (replies, and roots of threads)
    thread_ts TEXT,
    user_id TEXT NOT NULL,
    text TEXT NOT NULL,
    reply_count INTEGER NOT NULL,
    flags INTEGER NOT NULL,       -- is_bot 1, is_self 2, mentions_self 4, deleted 8, broadcast 16
    more TEXT,                    -- JSON of the rarely set fields (files, reactions, edits...)
    version INTEGER NOT NULL,     -- the edit's ts key, 0 if never edited
    deleted INTEGER NOT NULL,     -- 1: a tombstone (no text, never indexed, wins over copies)
    UNIQUE (chan, ts_key)
);
CREATE INDEX messages_thread ON messages (chan, thread_key, ts_key) WHERE thread_key IS NOT NULL;
CREATE TABLE pins (
    chan INTEGER NOT NULL,
    ts_key INTEGER NOT NULL,
    user TEXT NOT NULL,
    PRIMARY KEY (chan, ts_key)
) WITHOUT ROWID;
CREATE TABLE files (
    team TEXT NOT NULL,
    file_id TEXT NOT NULL,
    chan INTEGER,
    ts_key INTEGER,
    record TEXT NOT NULL,         -- the FileRef as JSON
    PRIMARY KEY (team, file_id)
) WITHOUT ROWID;
CREATE TABLE shards (
    id INTEGER PRIMARY KEY,       -- the FTS5 table ix_<id>, made when its first row comes
    pending INTEGER NOT NULL      -- 1: it still holds erased terms (the erase pass merges it)
);
CREATE TABLE chan_shards (        -- the shards a channel has words in (what a search reads)
    chan INTEGER NOT NULL,
    shard INTEGER NOT NULL,
    PRIMARY KEY (chan, shard)
) WITHOUT ROWID;
CREATE TABLE cursors (
    chan INTEGER NOT NULL,
    kind TEXT NOT NULL,
    cursor TEXT NOT NULL,         -- a BackfillCursor as JSON
    PRIMARY KEY (chan, kind)
) WITHOUT ROWID;
"""

_V2_TABLES = _SCHEMA[_SCHEMA.index("CREATE TABLE shards") : _SCHEMA.index("CREATE TABLE cursors")]


def _v1_to_v2(db: sqlite3.Connection) -> None:
    """One FTS5 table per channel -> the shared shards: every live message is indexed again
    (scoped to its channel), then the channel tables are dropped (``secure_delete`` zeroes
    their pages)."""
    for statement in _V2_TABLES.split(";\n"):
        if statement.strip():
            db.execute(statement)
    reindex_all(db)
    for (chan,) in db.execute("SELECT id FROM channels").fetchall():
        db.execute(f"DROP TABLE IF EXISTS fts_{int(chan)}")
    db.execute("ALTER TABLE channels DROP COLUMN erase_pending")


def _v2_to_v3(db: sqlite3.Connection) -> None:
    """Nothing to change: every message of a version 2 store is indexed (no mark)."""


# version -> the step that takes a store from it to the next version (in one transaction).
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1_to_v2, 2: _v2_to_v3}


def check_header(path: Path) -> None:
    """Refuse a file that is not an SQLite database, or is shorter than its header says."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return
    if size == 0:
        return  # SQLite treats an empty file as a new database
    with path.open("rb") as handle:
        header = handle.read(100)
    if len(header) < 100 or not header.startswith(_HEADER):
        raise StoreCorrupt(path, "no SQLite header")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counter, valid_for = header[24:28], header[92:96]
    if page_size < 512 or page_size & (page_size - 1):
        raise StoreCorrupt(path, f"page size {page_size} in the header")
    # The header's page count is trustworthy when its change counter matches (every SQLite
    # since 3.7.0 writes both); a file shorter than that count lost its tail.
    if counter == valid_for and size < pages * page_size:
        raise StoreCorrupt(path, f"truncated: {size} bytes, the header says {pages * page_size}")


def prepare(db: sqlite3.Connection, path: Path) -> int:
    """Create or migrate the schema on the writer connection; the version it is at."""
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        application = int(db.execute("PRAGMA application_id").fetchone()[0])
        tables = int(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])
    except sqlite3.DatabaseError as error:
        raise StoreCorrupt(path, str(error)) from None
    if version == 0 and tables == 0:
        with _transaction(db):
            for statement in _SCHEMA.split(";\n"):
                if statement.strip():
                    db.execute(statement)
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        return SCHEMA_VERSION
    if application != APPLICATION_ID:
        raise StoreCorrupt(path, "another application's database")
    if version > SCHEMA_VERSION:
        raise StoreTooNew(path, version, SCHEMA_VERSION)
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise StoreCorrupt(path, f"schema version {version}, which no migration starts from")
        with _transaction(db):
            step(db)
            version += 1
            db.execute(f"PRAGMA user_version = {version}")
    return version


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an error) on an autocommit connection."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, trace: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")
