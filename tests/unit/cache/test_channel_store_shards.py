"""The full-text index in shared shards (schema 2): the schema does not grow with channels,
each channel's words stay its own, an erase merges only the shards that held the words, and a
version-1 store (one FTS5 table per channel) is migrated on open."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from chanctx.cache.channel_store import (
    SCHEMA_VERSION,
    MessageDeleted,
    MessagePosted,
    SqliteChannelStore,
    StoreTooNew,
)
from chanctx.cache.channel_store._fts import SHARD_BITS, channel_code, scoped_text, scoped_texts
from chanctx.cache.channel_store.bulk import plain_message_row, post_rows
from chanctx.context import Message
from hypothesis import given
from hypothesis import strategies as st

T = "T1"
BASE = 1_700_000_000


def ts(second: int) -> str:
    return f"{BASE + second}.000000"


def msg(second: int, text: str, channel: str = "C1") -> MessagePosted:
    return MessagePosted(T, Message(channel=channel, ts=ts(second), user_id="U1", text=text))


def disk(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.iterdir() if p.is_file())


def schema_rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0])


def shard_bytes(path: Path, shard: int) -> bytes:
    with sqlite3.connect(path) as db:
        rows = db.execute(f"SELECT id, block FROM ix_{shard}_data ORDER BY id").fetchall()
    return b"".join(bytes(str(i), "ascii") + bytes(block) for i, block in rows)


def test_the_schema_does_not_grow_with_the_channels(tmp_path: Path) -> None:
    with SqliteChannelStore(tmp_path) as store:
        store.write([msg(1, "first words")])
        one = schema_rows(store.path)
        store.write([msg(n, f"word{n} deploy", channel=f"C{n}") for n in range(2, 60)])
        assert schema_rows(store.path) == one
        for n in range(2, 60):
            assert [c.ts for c in store.search_candidates(T, f"C{n}", [f"word{n}"], 5)] == [ts(n)]


def test_a_channel_finds_only_its_own_words_and_ranks_within_itself(tmp_path: Path) -> None:
    with SqliteChannelStore(tmp_path) as store:
        store.write(
            [msg(n, "deploy rollback deploy", channel="BIG") for n in range(1, 200)]
            + [
                msg(300, "the deploy failed", channel="SMALL"),
                msg(301, "lunch at noon", channel="SMALL"),
                msg(302, "deploy deploy deploy again", channel="SMALL"),
            ]
        )
        found = store.search_candidates(T, "SMALL", ["deploy"], 10)
        assert [c.ts for c in found] == [ts(302), ts(300)]
        assert found[0].score > found[1].score
        assert store.search_candidates(T, "SMALL", ["rollback"], 10) == []
        assert len(store.search_candidates(T, "BIG", ["deploy"], 500)) == 199
        assert store.search_candidates(T, "BIG", ["lunch"], 10) == []


@given(st.integers(0, 2_000_000) | st.integers(0, 30**6), st.integers(0, 2_000_000))
def test_channel_codes_are_consonants_distinct_and_none_starts_another(a: int, b: int) -> None:
    code, other = channel_code(a), channel_code(b)
    assert 2 <= len(code) <= 7 and not set(code) & set("aeiouy")
    assert (code == other) == (a == b)
    assert a == b or not (code.startswith(other) or other.startswith(code))


def test_the_first_channels_have_the_shortest_codes() -> None:
    assert [len(channel_code(n)) for n in (0, 509, 510, 9509, 9510, 1_629_509, 1_629_510)] == [
        2, 2, 3, 3, 5, 5, 7,
    ]  # fmt: skip
    assert len({channel_code(n) for n in range(12_000)}) == 12_000


def _store_at_row_id(tmp_path: Path, next_id: int) -> SqliteChannelStore:
    """A store whose next message takes row id ``next_id`` (a placeholder row, deleted)."""
    store = SqliteChannelStore(tmp_path)
    store.close()
    with sqlite3.connect(store.path) as db:
        db.execute("INSERT INTO channels (id, team, channel) VALUES (99, 'T0', 'PAD')")
        db.execute(
            "INSERT INTO messages (id, chan, ts_key, ts, user_id, text, reply_count, flags, "
            "version, deleted) VALUES (?, 99, 1, '0.000001', '', '', 0, 8, 0, 1)",
            (next_id - 1,),
        )
    return SqliteChannelStore(tmp_path)


def test_bulk_rows_across_a_shard_boundary_and_an_erase_merges_one_shard(tmp_path: Path) -> None:
    boundary = 1 << SHARD_BITS
    store = _store_at_row_id(tmp_path, boundary - 3)
    rows = [plain_message_row(ts(n), "U1", f"alpha{n} common") for n in range(6)]
    post_rows(store, T, "C1", rows)
    found = store.search_candidates(T, "C1", ["common"], 10)
    assert sorted(c.ts for c in found) == [ts(n) for n in range(6)]
    assert [c.ts for c in store.search_candidates(T, "C1", ["alpha5"], 10)] == [ts(5)]
    store.write([msg(10, "zyzzyvaword in the old shard")])  # lands in shard 1
    store.close()
    assert b"zyzzyvaword" in disk(tmp_path)
    old_shard = shard_bytes(store.path, 0)
    store = SqliteChannelStore(tmp_path)
    store.write([MessageDeleted(T, "C1", ts(10))])
    store.close()
    assert shard_bytes(store.path, 0) == old_shard  # untouched: not merged
    assert b"zyzzyvaword" not in disk(tmp_path)
    with SqliteChannelStore(tmp_path) as store:
        assert store.search_candidates(T, "C1", ["zyzzyvaword"], 5) == []
        assert len(store.search_candidates(T, "C1", ["common"], 10)) == 6


# The version-1 schema as chanctx wrote it: one contentless FTS5 table per channel.
_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE channels (id INTEGER PRIMARY KEY, team TEXT NOT NULL, channel TEXT NOT NULL,
    name TEXT, erased_through INTEGER, erase_pending INTEGER NOT NULL DEFAULT 0,
    UNIQUE (team, channel));
CREATE TABLE users (team TEXT NOT NULL, user TEXT NOT NULL, name TEXT NOT NULL,
    PRIMARY KEY (team, user)) WITHOUT ROWID;
CREATE TABLE messages (id INTEGER PRIMARY KEY, chan INTEGER NOT NULL, ts_key INTEGER NOT NULL,
    ts TEXT NOT NULL, thread_key INTEGER, thread_ts TEXT, user_id TEXT NOT NULL,
    text TEXT NOT NULL, reply_count INTEGER NOT NULL, flags INTEGER NOT NULL, more TEXT,
    version INTEGER NOT NULL, deleted INTEGER NOT NULL, UNIQUE (chan, ts_key));
CREATE INDEX messages_thread ON messages (chan, thread_key, ts_key) WHERE thread_key IS NOT NULL;
CREATE TABLE pins (chan INTEGER NOT NULL, ts_key INTEGER NOT NULL, user TEXT NOT NULL,
    PRIMARY KEY (chan, ts_key)) WITHOUT ROWID;
CREATE TABLE files (team TEXT NOT NULL, file_id TEXT NOT NULL, chan INTEGER, ts_key INTEGER,
    record TEXT NOT NULL, PRIMARY KEY (team, file_id)) WITHOUT ROWID;
CREATE TABLE cursors (chan INTEGER NOT NULL, kind TEXT NOT NULL, cursor TEXT NOT NULL,
    PRIMARY KEY (chan, kind)) WITHOUT ROWID;
"""
_FTS_V1 = "USING fts5(doc, content='', tokenize='porter unicode61 remove_diacritics 2')"


def _v1_store(data_dir: Path) -> Path:
    """A version-1 file: two channels, messages on both sides of a shard boundary, a
    tombstone, and in channel 1's table the words of a deleted message not yet merged away."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / "channels.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")
    db.execute("PRAGMA journal_mode = WAL")
    db.executescript(_V1)
    db.execute("PRAGMA application_id = 1667461937")
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO channels (id, team, channel, name, erase_pending) "
               "VALUES (1, 'T1', 'C1', 'general', 1), (2, 'T1', 'C2', NULL, 0)")  # fmt: skip
    boundary = 1 << SHARD_BITS
    rows = [
        (boundary - 2, 1, 1, "checkout timeout again", 0),
        (boundary - 1, 2, 2, "checkout in the other channel", 0),
        (boundary, 1, 3, "payment service failing", 0),
        (boundary + 1, 1, 4, "", 1),
    ]
    for row_id, chan, second, text, deleted in rows:
        db.execute(
            "INSERT INTO messages (id, chan, ts_key, ts, user_id, text, reply_count, flags, "
            "version, deleted) VALUES (?, ?, ?, ?, 'U1', ?, 0, ?, 0, ?)",
            (row_id, chan, (BASE + second) * 10**9, ts(second), text, 8 * deleted, deleted),
        )
    for chan in (1, 2):
        db.execute(f"CREATE VIRTUAL TABLE fts_{chan} {_FTS_V1}")
        for row_id, owner, _, text, deleted in rows:
            if owner == chan and not deleted:
                db.execute(f"INSERT INTO fts_{chan} (rowid, doc) VALUES (?, ?)", (row_id, text))
    db.execute("INSERT INTO fts_1 (rowid, doc) VALUES (5, 'quixoticsecret erased')")
    db.execute(
        "INSERT INTO fts_1 (fts_1, rowid, doc) VALUES ('delete', 5, 'quixoticsecret erased')"
    )
    db.close()
    return path


def test_a_version_1_store_is_migrated_on_open(tmp_path: Path) -> None:
    path = _v1_store(tmp_path)
    assert b"quixoticsecret" in disk(tmp_path)
    with SqliteChannelStore(tmp_path) as store:
        assert store.schema_version == SCHEMA_VERSION == 3
        assert [c.ts for c in store.search_candidates(T, "C1", ["checkout"], 5)] == [ts(1)]
        assert [c.ts for c in store.search_candidates(T, "C2", ["checkout"], 5)] == [ts(2)]
        assert [c.ts for c in store.search_candidates(T, "C1", ["failed"], 5)] == [ts(3)]
        assert [m.ts for m in store.messages(T, "C1")] == [ts(1), ts(3)]
        assert store.get(T, "C1", ts(4)) is not None  # the tombstone stays
        assert store.channel_names(T) == {"C1": "general"}
        store.write([msg(9, "after the migration", channel="C2")])
        assert [c.ts for c in store.search_candidates(T, "C2", ["migration"], 5)] == [ts(9)]
    with sqlite3.connect(path) as db:
        names = {n for (n,) in db.execute("SELECT name FROM sqlite_master")}
        columns = {c[1] for c in db.execute("PRAGMA table_info(channels)")}
    assert not {n for n in names if n.startswith("fts_")}
    assert {"ix_0", "ix_1", "shards", "chan_shards"} <= names
    assert "erase_pending" not in columns
    assert b"quixoticsecret" not in disk(tmp_path)


def test_a_newer_store_still_stops_with_store_too_new(tmp_path: Path) -> None:
    with SqliteChannelStore(tmp_path) as store:
        store.write([msg(1, "hello")])
    with sqlite3.connect(tmp_path / "channels.sqlite3") as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreTooNew):
        SqliteChannelStore(tmp_path)


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text())
def test_a_document_splits_into_words_the_same_way_on_every_path(text: str) -> None:
    expected = ["0b" + word for word in re.findall(r"[^\W_]+", text)]
    assert scoped_text("0b", text).split() == expected
    batch = scoped_texts("0b", ["one", text, "two", text + "\x00é"])
    assert [d.split() for d in batch[:3]] == [["0bone"], expected, ["0btwo"]]
