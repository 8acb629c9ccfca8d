"""``search_candidates`` remembers the row ids and ts it read (``_fts_search.RowCache``), and no
write is ever answered from a stale entry: after any sequence of posts, bulk posts, edits,
deletions, forgotten users, deleted files and forgotten channels, the store that remembers
answers exactly as a store opened afresh on the same file (which has read nothing before).
A read-only store beside the writer (another connection, as ``chanctx query`` beside the bot)
sees the writer's commits too. A write to one channel leaves the other channels' entries in
use."""

from __future__ import annotations

import math
from pathlib import Path
from tempfile import TemporaryDirectory

from chanctx.cache.channel_store import (
    ChannelForgotten,
    FileShared,
    MessageDeleted,
    MessagePosted,
    SqliteChannelStore,
)
from chanctx.cache.channel_store._fts_search import CAP
from chanctx.cache.channel_store.bulk import plain_message_row, post_rows
from chanctx.context import FileRef, Message
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.store_steps import T, event, ts

WORDS = ("deploy", "pool", "zanzibar", "lunch")
ASKED = (["deploy"], ["deploy", "zanzibar"], ["pool", "lunch"], ["zanzibar"])


def _answers(store: SqliteChannelStore) -> list[object]:
    return [
        [(c.ts, c.score) for c in store.search_candidates(T, channel, terms, 7)]
        for channel in ("C1", "C2")
        for terms in ASKED
    ]


def _fresh(path: Path) -> list[object]:
    reader = SqliteChannelStore(path, read_only=True)
    try:
        return _answers(reader)
    finally:
        reader.close()


_step = st.tuples(
    st.integers(0, 8),  # 0-6 an event, 7 a bulk post of new rows, 8 the indexing after commit
    st.integers(0, 40),
    st.sampled_from(["C1", "C2"]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
)


@settings(deadline=None, max_examples=40)
@given(st.lists(_step, min_size=1, max_size=12), st.booleans())
def test_the_remembering_store_answers_as_a_fresh_one(
    steps: list[tuple[int, int, str, list[str]]], deferred: bool
) -> None:
    # ``deferred``: FTS5 is indexed after the commit, here only when a step asks (kind 8), so
    # a search between a write and its indexing remembers row ids the indexing makes stale.
    with TemporaryDirectory() as tmp:
        path = Path(tmp)
        store = SqliteChannelStore(path, index_after=math.inf if deferred else None)
        beside = SqliteChannelStore(path, read_only=True)  # another connection, remembering
        try:
            for kind, second, channel, words in steps:
                if kind == 8:
                    store.index_pending()
                elif kind == 7:
                    rows = [plain_message_row(ts(1_000 + second * 10 + n), "U1", " ".join(words))
                            for n in range(3)]  # fmt: skip
                    post_rows(store, T, channel, rows)
                elif kind == 5:
                    store.write([FileShared(T, FileRef(artifact_id="F1"), channel, ts(second))])
                    store.write([event(kind, second, channel, words)])
                else:
                    store.write([event(kind, second, channel, words)])
                expected = _fresh(path)
                assert _answers(store) == expected
                assert _answers(beside) == expected
        finally:
            beside.close()
            store.close()


def test_many_matches_stay_right_after_writes_and_other_channels_keep_theirs(
    tmp_path: Path,
) -> None:
    # More matches than CAP: the common word's newest row ids and their ts are remembered.
    store = SqliteChannelStore(tmp_path)
    rows = [plain_message_row(ts(n), "U1", f"deploy number {n}") for n in range(CAP + 200)]
    post_rows(store, T, "C1", rows)
    store.write([MessagePosted(T, Message(channel="C2", ts=ts(1), user_id="U1", text="deploy"))])
    first = store.search_candidates(T, "C1", ["deploy", "number"], 5)
    assert first == _fresh_one(tmp_path, "C1")
    chan = store._chan(T, "C1")
    assert chan is not None
    tags = store.row_cache.tags(chan)
    store.write([MessagePosted(T, Message(channel="C2", ts=ts(2), user_id="U1", text="deploy"))])
    assert store.row_cache.tags(chan) == tags  # another channel's write: C1's entries hold
    newest = ts(CAP + 500)
    store.write([MessagePosted(T, Message(channel="C1", ts=newest, user_id="U1", text="deploy"))])
    assert store.row_cache.tags(chan) != tags
    after = store.search_candidates(T, "C1", ["deploy", "number"], 5)
    assert after == _fresh_one(tmp_path, "C1")
    store.write([MessageDeleted(T, "C1", first[0].ts)])
    gone = store.search_candidates(T, "C1", ["deploy", "number"], 5)
    assert first[0].ts not in [c.ts for c in gone]
    assert gone == _fresh_one(tmp_path, "C1")
    store.close()


def _fresh_one(path: Path, channel: str) -> object:
    reader = SqliteChannelStore(path, read_only=True)
    try:
        return reader.search_candidates(T, channel, ["deploy", "number"], 5)
    finally:
        reader.close()


def test_row_ids_an_erased_channel_freed_are_read_again_when_reused(tmp_path: Path) -> None:
    # Rows' ts are remembered across writes (a row keeps its ts), but erasing a channel frees
    # its row ids, and the next messages get them: their ts must be read anew.
    store = SqliteChannelStore(tmp_path)
    rows = [plain_message_row(ts(n), "U1", f"deploy number {n}") for n in range(CAP + 50)]
    post_rows(store, T, "C1", rows)
    before = store.search_candidates(T, "C1", ["deploy", "number"], 5)
    assert before == _fresh_one(tmp_path, "C1")
    store.write([ChannelForgotten(T, "C1")])
    later = [plain_message_row(ts(10_000 + n), "U1", f"deploy number {n}") for n in range(CAP + 50)]
    post_rows(store, T, "C1", later)
    after = store.search_candidates(T, "C1", ["deploy", "number"], 5)
    assert after == _fresh_one(tmp_path, "C1")
    assert all(c.ts >= ts(10_000) for c in after)
    store.close()
