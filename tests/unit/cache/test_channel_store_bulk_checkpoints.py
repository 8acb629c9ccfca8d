"""``checkpoints_aside``: while an import writes, a thread of its own copies the log into the
database (the writer's commits do not), and afterwards the writer checkpoints as before."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from chanctx.cache.channel_store import DB_NAME, SqliteChannelStore, plain_message_row, post_rows
from chanctx.cache.channel_store.bulk import checkpoints_aside

TEAM, CHANNEL = "T1", "C1"


def autocheckpoint(store: SqliteChannelStore) -> int:
    pages: list[int] = []
    store.transact(
        lambda applier, _: pages.append(
            applier.db.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        )
    )
    return pages[0]


def test_the_log_is_copied_by_the_thread_and_the_writer_checkpoints_again_after(
    tmp_path: Path,
) -> None:
    rows = [
        plain_message_row(f"{1_700_000_000 + n}.000100", "U1", f"deploy {n}") for n in range(10_000)
    ]
    threads = threading.active_count()
    with SqliteChannelStore(tmp_path, synchronous="NORMAL") as store:
        store.erase()  # the schema's pages copied: the file grows now only by a checkpoint
        before = (tmp_path / DB_NAME).stat().st_size
        with checkpoints_aside(store, every=0.01):
            assert autocheckpoint(store) == 0  # the writer's commits leave the log alone
            for start in range(0, len(rows), 5_000):
                post_rows(store, TEAM, CHANNEL, rows[start : start + 5_000])
            deadline = time.monotonic() + 60
            while (tmp_path / DB_NAME).stat().st_size <= before and time.monotonic() < deadline:
                time.sleep(0.01)
            assert (tmp_path / DB_NAME).stat().st_size > before  # the thread copied the log
        assert autocheckpoint(store) == 1000
        assert threading.active_count() == threads
    with SqliteChannelStore(tmp_path, read_only=True) as reopened:
        assert [m.ts for m in reopened.messages(TEAM, CHANNEL, limit=len(rows))] == [
            row[1] for row in rows
        ]
