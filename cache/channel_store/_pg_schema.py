"""The PostgreSQL store's schema, its version, and the migrations that run once per database.

Everything lives in one schema (``chanctx`` unless told otherwise), so the store shares a
database with other applications without touching their tables. ``schema_version`` holds one
row: the version, and whether an erase pass is due (so a process killed between a commit and
its pass leaves the pass to the next opener). Opening a store:

* no ``schema_version`` table: the schema is created at :data:`PG_SCHEMA_VERSION`;
* an older version: each step of :data:`PG_MIGRATIONS` runs in one transaction, in order;
* a newer version: :class:`~chanctx.cache.channel_store._errors.StoreTooNew`.

Several replicas start at once against one database: the check and the migration run under a
session advisory lock (:data:`MIGRATION_LOCK`), so exactly one of them migrates and the others
find the work done.

Full-text search is a ``tsvector`` column of ``messages`` (the document of ``_rows.document``:
text, author, file titles) with a GIN index; a tombstone's is NULL. Text and lexemes live in
one row, so a deletion or an edit removes both in one statement.

*Search versions* (version 2). Every row a write inserts or rewrites takes the next value of
``message_seq`` into ``messages.seq`` (the column's default, and ``seq = excluded.seq`` in the
upserts), and a purge, a size cut or a batch that forgot a channel adds one to
``schema_version.removed`` in its transaction (a channel whose rows all predate version 2
has no ``seq``: deleting them leaves its ``max(seq)`` NULL, as it was).
So ``(max(seq) of a channel, removed)`` moves whenever the channel's searchable rows change,
on any replica, and reading it is one backward step of the ``messages_seq`` index
(``_pg_search_cache``). Writes to one team's channels run under that team's advisory lock
(``postgres``), so their ``seq`` values follow the order they commit in: a reader never sees a
later value while an earlier one is still uncommitted. No row is shared between writers: the
purge and the size cut already update the ``schema_version`` row last in their transactions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import psycopg
from chanctx.cache.channel_store._errors import StoreCorrupt, StoreTooNew
from psycopg import sql
from psycopg.rows import TupleRow

__all__ = [
    "MIGRATION_LOCK",
    "PG_MIGRATIONS",
    "PG_SCHEMA_VERSION",
    "TABLES",
    "TS_CONFIG",
    "prepare_schema",
]

PG_SCHEMA_VERSION = 2
# The advisory lock key of migrations ("ccs1" as an int, the SQLite store's application id).
MIGRATION_LOCK = 0x63637331
# English stems and stop words: the nearest of PostgreSQL's configurations to the in-memory
# index (Porter stems), so "failing" finds "failed" here as there.
TS_CONFIG = "english"
TABLES = ("channels", "users", "messages", "pins", "files", "cursors", "schema_version")

_SCHEMA = """
CREATE TABLE schema_version (
    version integer NOT NULL,
    erase_pending boolean NOT NULL DEFAULT false, -- a batch removed text; VACUUM FULL is due
    removed bigint NOT NULL DEFAULT 0  -- purges and size cuts so far (search versions)
);
CREATE SEQUENCE message_seq;
CREATE TABLE channels (
    id bigserial PRIMARY KEY,
    team text NOT NULL,
    channel text NOT NULL,
    name text,
    erased_through bigint,          -- forgotten: no ts key at or below this is accepted again
    UNIQUE (team, channel)
);
CREATE TABLE users (
    team text NOT NULL,
    user_id text NOT NULL,
    name text NOT NULL,
    PRIMARY KEY (team, user_id)
);
CREATE TABLE messages (
    chan bigint NOT NULL REFERENCES channels (id),
    ts_key bigint NOT NULL,         -- the exact ts as an int (ns): the order and the key
    ts text NOT NULL,
    thread_key bigint,              -- the root's ts key (replies, and roots of threads)
    thread_ts text,
    user_id text NOT NULL,
    text text NOT NULL,
    reply_count integer NOT NULL,
    flags integer NOT NULL,         -- is_bot 1, is_self 2, mentions_self 4, deleted 8, broadcast 16
    more text,                      -- JSON of the rarely set fields (files, reactions, edits...)
    version bigint NOT NULL,        -- the edit's ts key, 0 if never edited
    deleted boolean NOT NULL,       -- a tombstone: no text, no lexemes, wins over copies
    doc tsvector,                   -- the full-text document's lexemes (NULL for a tombstone)
    seq bigint DEFAULT nextval('message_seq'),  -- the write that last set the row (version 2)
    PRIMARY KEY (chan, ts_key)
);
CREATE INDEX messages_seq ON messages (chan, seq);
CREATE INDEX messages_thread ON messages (chan, thread_key, ts_key) WHERE thread_key IS NOT NULL;
CREATE INDEX messages_doc ON messages USING gin (doc);
CREATE INDEX messages_user ON messages (user_id) WHERE NOT deleted;
CREATE INDEX messages_age ON messages (ts_key);
CREATE TABLE pins (
    chan bigint NOT NULL,
    ts_key bigint NOT NULL,
    user_id text NOT NULL,
    PRIMARY KEY (chan, ts_key)
);
CREATE TABLE files (
    team text NOT NULL,
    file_id text NOT NULL,
    chan bigint,
    ts_key bigint,
    record text NOT NULL,           -- the FileRef as JSON
    PRIMARY KEY (team, file_id)
);
CREATE TABLE cursors (
    chan bigint NOT NULL,
    kind text NOT NULL,
    cursor text NOT NULL,           -- a BackfillCursor as JSON
    PRIMARY KEY (chan, kind)
)
"""


def _add_search_versions(conn: psycopg.Connection[TupleRow]) -> None:
    """1 -> 2: ``messages.seq``, its index and ``schema_version.removed``. The rows already
    stored keep a NULL ``seq`` (adding a column with a volatile default would rewrite the
    table); ``max(seq)`` ignores them, and their first rewrite gives them one."""
    for statement in (
        "CREATE SEQUENCE message_seq",
        "ALTER TABLE messages ADD COLUMN seq bigint",
        "ALTER TABLE messages ALTER COLUMN seq SET DEFAULT nextval('message_seq')",
        "CREATE INDEX messages_seq ON messages (chan, seq)",
        "ALTER TABLE schema_version ADD COLUMN removed bigint NOT NULL DEFAULT 0",
    ):
        conn.execute(statement.encode())


# version -> the step that takes a store from it to the next version (in one transaction).
PG_MIGRATIONS: dict[int, Callable[[psycopg.Connection[TupleRow]], None]] = {
    1: _add_search_versions,
}


def prepare_schema(conn: psycopg.Connection[TupleRow], schema: str, where: str) -> int:
    """Create or migrate ``schema`` under the migration lock; the version it is at.

    ``conn`` is an autocommit connection whose search_path is ``schema``.
    """
    conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        return _prepare_locked(conn, schema, where)
    finally:
        conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


def _prepare_locked(conn: psycopg.Connection[TupleRow], schema: str, where: str) -> int:
    exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    if exists is None:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    table = conn.execute(
        "SELECT to_regclass(format('%%I.schema_version', %s::text))", (schema,)
    ).fetchone()
    if table is None or table[0] is None:
        with conn.transaction():
            for statement in _SCHEMA.split(";\n"):
                conn.execute(statement.encode())
            conn.execute("INSERT INTO schema_version VALUES (%s)", (PG_SCHEMA_VERSION,))
        return PG_SCHEMA_VERSION
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    if row is None:
        raise StoreCorrupt(Path(where), "schema_version is empty")
    version = int(row[0])
    if version > PG_SCHEMA_VERSION:
        raise StoreTooNew(Path(where), version, PG_SCHEMA_VERSION)
    while version < PG_SCHEMA_VERSION:
        step = PG_MIGRATIONS.get(version)
        if step is None:
            raise StoreCorrupt(
                Path(where), f"schema version {version}, which no migration starts from"
            )
        with conn.transaction():
            step(conn)
            version += 1
            conn.execute("UPDATE schema_version SET version = %s", (version,))
    return version
