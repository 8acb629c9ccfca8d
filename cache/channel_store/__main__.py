"""``python -m chanctx.cache.channel_store check DATA_DIR``: is the store readable and whole?

Changes nothing (it runs beside a bot using the same data dir): the file's header, its schema
version, SQLite's ``integrity_check`` and each full-text index shard. Prints one line per
problem and a summary; exit status 0 when the store is whole, 1 when it is not. A store whose
only problem is an index can be repaired with ``rebuild-index`` (the bot stopped): every
shard is built again from the messages.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from chanctx.cache.channel_store._errors import StoreError
from chanctx.cache.channel_store._fts import reindex_all, shard_table
from chanctx.cache.channel_store.sqlite import SqliteChannelStore

__all__ = ["check", "main", "rebuild_index"]

_USAGE = "usage: python -m chanctx.cache.channel_store check|rebuild-index DATA_DIR"


def check(data_dir: Path) -> int:
    try:
        store = SqliteChannelStore(data_dir, read_only=True)
    except StoreError as error:
        print(error)
        return 1
    # FTS5's integrity check is spelt as an INSERT: it runs in a transaction rolled back.
    db = sqlite3.connect(store.path, isolation_level=None, timeout=10)
    try:
        problems = [r[0] for r in db.execute("PRAGMA integrity_check") if r[0] != "ok"]
        db.execute("BEGIN")
        for (shard,) in db.execute("SELECT id FROM shards").fetchall():
            table = shard_table(shard)
            try:
                db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 0)")
            except sqlite3.DatabaseError as error:
                problems.append(f"{table}: {error}")
        db.execute("ROLLBACK")
    except sqlite3.DatabaseError as error:
        problems = [str(error)]
    finally:
        db.close()
        store.close()
    for problem in problems:
        print(f"{store.path}: {problem}")
    print(f"{store.path}: schema version {store.schema_version}, {len(problems)} problem(s)")
    return 1 if problems else 0


def rebuild_index(data_dir: Path) -> int:
    try:
        store = SqliteChannelStore(data_dir)
    except StoreError as error:
        print(error)
        return 1
    db = sqlite3.connect(store.path, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete = ON")
        db.execute("BEGIN IMMEDIATE")
        for (shard,) in db.execute("SELECT id FROM shards").fetchall():
            db.execute(f"DROP TABLE IF EXISTS {shard_table(shard)}")
        db.execute("DELETE FROM shards")
        db.execute("DELETE FROM chan_shards")
        known = reindex_all(db)
        db.execute("COMMIT")
    finally:
        db.close()
        store.close()
    print(f"{store.path}: rebuilt {len(known)} index shard(s)")
    return 0


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("check", "rebuild-index"):
        print(_USAGE, file=sys.stderr)
        return 2
    data_dir = Path(argv[1])
    return check(data_dir) if argv[0] == "check" else rebuild_index(data_dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
