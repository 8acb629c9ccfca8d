"""Indexing after the commit (``SqliteChannelStore(index_after=...)``, module
``_deferred_index``): a message is stored at once and searchable once its batch ran; an edit
or deletion arriving before that batch leaves no old word in the index nor in the file; a row
id taken again below the mark is indexed with its write; bulk posts, retention and the size
bound keep the index whole; the store's thread indexes by itself."""

from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path

from chanctx.cache.channel_store import (
    ChannelForgotten,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    SqliteChannelStore,
    plain_message_row,
    post_rows,
)
from chanctx.cache.channel_store.__main__ import check
from chanctx.context import Message

TEAM = "T1"


def ts(n: int) -> str:
    return f"{1_700_000_000 + n}.000100"


def posted(channel: str, n: int, text: str) -> MessagePosted:
    return MessagePosted(TEAM, Message(channel=channel, ts=ts(n), text=text, user_id="U1"))


def hits(store: SqliteChannelStore, channel: str, word: str) -> list[str]:
    return [c.ts for c in store.search_candidates(TEAM, channel, [word], 10)]


def file_bytes(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data.iterdir() if p.is_file())


def test_a_message_is_stored_at_once_and_found_once_indexed(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "rollback of checkout-api")])
    assert [m.text for m in store.messages(TEAM, "C1")] == ["rollback of checkout-api"]
    assert hits(store, "C1", "rollback") == []
    store.index_pending()
    assert hits(store, "C1", "rollback") == [ts(1)]
    store.close()


def test_a_deletion_before_indexing_leaves_no_word_anywhere(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "password swordfishqz"), posted("C1", 2, "kept words")])
    store.write([MessageDeleted(TEAM, "C1", ts(1))])
    store.index_pending()
    assert hits(store, "C1", "swordfishqz") == []
    assert hits(store, "C1", "kept") == [ts(2)]
    store.close()
    assert b"swordfishqz" not in file_bytes(tmp_path)
    assert check(tmp_path) == 0  # every shard whole: no deletion of words never indexed


def test_an_edit_before_indexing_is_indexed_as_edited(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "window opens quartzlight")])
    store.write([MessageEdited(TEAM, "C1", ts(1), "window opens later", ts(50))])
    store.index_pending()
    assert hits(store, "C1", "quartzlight") == []
    assert hits(store, "C1", "later") == [ts(1)]
    store.close()
    assert b"quartzlight" not in file_bytes(tmp_path)


def test_an_indexed_message_deleted_later_leaves_the_index(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "password swordfishqz")])
    store.index_pending()
    store.write([posted("C1", 2, "newer unindexed"), MessageDeleted(TEAM, "C1", ts(1))])
    assert hits(store, "C1", "swordfishqz") == []
    store.close()
    assert b"swordfishqz" not in file_bytes(tmp_path)
    assert check(tmp_path) == 0


def test_a_row_id_taken_again_below_the_mark_is_indexed_with_its_write(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "first"), posted("C2", 2, "last row")])
    store.index_pending()  # the mark is at the second row
    store.write([ChannelForgotten(TEAM, "C2")])  # the largest id is free again
    store.write([posted("C1", 3, "reusedqz")])  # SQLite gives it that id, below the mark
    assert hits(store, "C1", "reusedqz") == [ts(3)]
    store.close()
    assert check(tmp_path) == 0


def test_a_forgotten_channel_with_unindexed_rows_leaves_the_index_whole(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "indexed words")])
    store.index_pending()
    store.write([posted("C1", 2, "unindexed wordsqz")])
    store.write([ChannelForgotten(TEAM, "C1")])
    store.index_pending()
    assert hits(store, "C1", "indexed") == []
    store.close()
    assert check(tmp_path) == 0
    assert b"wordsqz" not in file_bytes(tmp_path)


def test_bulk_posts_retention_and_the_size_bound_keep_the_index_whole(tmp_path: Path) -> None:
    day = 86_400
    now = [1_700_000_000 + 100 * day]
    store = SqliteChannelStore(
        tmp_path, index_after=math.inf, retention_days=30, clock=lambda: float(now[0])
    )
    store.write([posted("C1", 99 * day, "waiting alphaqz")])
    post_rows(store, TEAM, "C1", [plain_message_row(ts(99 * day + n), "U1", "bulk betaqz")
                                  for n in range(1, 4)])  # fmt: skip
    assert hits(store, "C1", "alphaqz") == [ts(99 * day)]  # indexed before the bulk rows
    assert len(hits(store, "C1", "betaqz")) == 3
    store.write([posted("C1", 99 * day + 10, "old gammaqz"), posted("C1", 140 * day, "new")])
    now[0] += 60 * day  # everything but the last is past the retention period now
    assert store.purge() == 5
    assert hits(store, "C1", "gammaqz") == []
    assert hits(store, "C1", "new") == [ts(140 * day)]  # the purge indexed what waited first
    store.write([posted("C1", 150 * day, "fresh deltaqz")])
    store.enforce_size(1)  # drops every message, the unindexed ones too
    assert store.messages(TEAM, "C1") == []
    store.close()
    assert check(tmp_path) == 0
    assert b"gammaqz" not in file_bytes(tmp_path)


def test_the_store_thread_indexes_by_itself(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=0.01)
    store.write([posted("C1", 1, "soon indexedqz")])
    deadline = time.monotonic() + 60
    while not hits(store, "C1", "indexedqz") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hits(store, "C1", "indexedqz") == [ts(1)]
    store.close()


def test_a_store_opened_without_index_after_indexes_what_waits(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "left waitingqz")])
    store._close_writer()  # as a kill leaves it: committed, not indexed, nothing closed
    store._close_readers()
    reopened = SqliteChannelStore(tmp_path)
    assert hits(reopened, "C1", "waitingqz") == [ts(1)]
    reopened.close()
    db = sqlite3.connect(tmp_path / "channels.sqlite3")
    try:  # every row indexed: no mark left (what an older reader of the file expects)
        assert db.execute("SELECT value FROM meta WHERE key = 'indexed_through'").fetchone() is None
    finally:
        db.close()
    assert check(tmp_path) == 0


def test_a_version_2_store_opens_wholly_indexed(tmp_path: Path) -> None:
    with SqliteChannelStore(tmp_path) as store:
        store.write([posted("C1", 1, "older version words")])
    db = sqlite3.connect(tmp_path / "channels.sqlite3")
    db.execute("PRAGMA user_version = 2")  # what chanctx wrote before the mark existed
    db.close()
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    assert store.schema_version == 3
    assert hits(store, "C1", "older") == [ts(1)]
    store.write([posted("C1", 2, "newer words")])
    assert hits(store, "C1", "newer") == []
    store.close()
    with SqliteChannelStore(tmp_path, read_only=True) as reader:
        assert [c.ts for c in reader.search_candidates(TEAM, "C1", ["words"], 5)] == [ts(2), ts(1)]


def test_bulk_posts_that_take_the_one_by_one_path_are_indexed(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path, index_after=math.inf)
    store.write([posted("C1", 1, "stored before epsilonqz")])
    rows = [
        plain_message_row(ts(1), "U1", "stored before epsilonqz"),  # known
        plain_message_row(ts(2), "U1", "twice zetaqz"),
        plain_message_row(ts(2), "U1", "twice zetaqz"),  # a key twice: one by one
        plain_message_row(ts(3), "U1", "after the repeat etaqz"),
    ]
    post_rows(store, TEAM, "C1", rows)
    assert hits(store, "C1", "epsilonqz") == [ts(1)]
    assert hits(store, "C1", "zetaqz") == [ts(2)]
    assert hits(store, "C1", "etaqz") == [ts(3)]
    store.write([posted("C1", 4, "deferred again thetaqz")])
    assert hits(store, "C1", "thetaqz") == []
    store.close()
    with SqliteChannelStore(tmp_path, read_only=True) as reader:
        assert [c.ts for c in reader.search_candidates(TEAM, "C1", ["thetaqz"], 5)] == [ts(4)]
    assert check(tmp_path) == 0
