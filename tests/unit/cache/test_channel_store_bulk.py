"""The bulk writer leaves the store ``write`` leaves, for any sequence of posts, edits,
deletions and thread replies.

Two stores get the same steps; in one every post goes through ``write([MessagePosted...])``,
in the other the posts of a step go through ``post_rows``. Copies of a ts (older, newer,
edited, with or without thread counters), tombstones posted as messages, a key twice in one
batch, deletions and edits in between, a forgotten channel: after every step the messages,
replies, counts, stats and search candidates of both stores are the same.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from chanctx.cache._ts_keys import raw_ts_key
from chanctx.cache.channel_store import (
    ChannelForgotten,
    ChannelStore,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    SqliteChannelStore,
    StoreEvent,
    WriteResult,
    index_words,
    message_row,
    plain_message_row,
    plain_reply_row,
    post_rows,
    row_message,
    row_of,
)
from chanctx.cache.channel_store._fts import channel_code, scoped_text, scoped_words_sql
from chanctx.context import Message, Reaction
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = 1_700_000_000
TEAM = "T1"
CHANNELS = ("C1", "C2")
WORDS = ("alpha", "bravo", "checkout", "deploy", "zürich", "ça")


def ts_of(second: int, micros: int = 0) -> str:
    return f"{BASE + second}.{micros:06d}"


@st.composite
def messages(draw: st.DrawFn) -> Message:
    second = draw(st.integers(0, 12))
    root = draw(st.sampled_from([None, None, 0, 1, second]))
    text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=0, max_size=4)))
    edited = draw(st.sampled_from([None, None, 20, 21]))
    counters = root == second and draw(st.booleans())
    return Message.model_construct(
        channel=draw(st.sampled_from(CHANNELS)),
        ts=ts_of(second),
        thread_ts=None if root is None else ts_of(root),
        user_id=draw(st.sampled_from(["U1", "U2", ""])),
        text=text,
        edited_ts=None if edited is None else ts_of(edited),
        reply_count=draw(st.integers(1, 3)) if counters else 0,
        latest_reply=ts_of(draw(st.integers(13, 15))) if counters else None,
        reply_users=("U2",) if counters else (),
        reactions=(Reaction(name="eyes", count=1, users=("U2",)),) if draw(st.booleans()) else (),
        author_name=draw(st.sampled_from([None, "deploybot"])),
        deleted=draw(st.integers(0, 9)) == 0,  # a tombstone posted as a message
        is_broadcast=draw(st.booleans()) and root is not None and root != second,
    )


posts = st.tuples(st.just("posts"), st.lists(messages(), min_size=1, max_size=8))
edits = st.tuples(
    st.just("edit"),
    st.tuples(
        st.sampled_from(CHANNELS),
        st.integers(0, 12),
        st.sampled_from(WORDS),
        st.sampled_from([19, 20, 22]),
    ),
)
deletes = st.tuples(st.just("delete"), st.tuples(st.sampled_from(CHANNELS), st.integers(0, 12)))
forgets = st.tuples(st.just("forget"), st.sampled_from(CHANNELS))
steps = st.lists(st.one_of(posts, posts, edits, deletes, forgets), min_size=1, max_size=12)


def state(store: ChannelStore) -> dict[str, object]:
    out: dict[str, object] = {}
    for channel in CHANNELS:
        out[channel] = store.messages(TEAM, channel)
        out[channel + " all"] = [store.get(TEAM, channel, ts_of(s)) for s in range(16)]
        out[channel + " replies"] = [store.replies(TEAM, channel, ts_of(s)) for s in range(13)]
        found = store.search_candidates(TEAM, channel, list(WORDS), 50)
        out[channel + " search"] = sorted((c.ts, round(c.score, 6)) for c in found)
    stats = store.stats()
    out["stats"] = (
        stats.messages,
        stats.threads,
        stats.tombstones,
        [c.model_dump() for c in stats.per_channel],
    )
    return out


def counts(result: WriteResult) -> tuple[int, int, int, int]:
    return (result.applied, result.known + result.unknown, result.deleted, result.expired)


def play(plan: list[tuple[str, object]], by_write: ChannelStore, in_bulk: ChannelStore) -> None:
    """Run ``plan`` on both stores, posts through ``write`` on one and ``post_rows`` on the
    other, and hold them equal after every step (the PostgreSQL bulk test plays it too)."""
    for kind, arg in plan:
        if kind == "posts":
            assert isinstance(arg, list)
            for channel in CHANNELS:
                mine = [m for m in arg if m.channel == channel]
                if not mine:
                    continue
                expected = by_write.write([MessagePosted(TEAM, m) for m in mine])
                got = post_rows(in_bulk, TEAM, channel, [row_of(m) for m in mine])
                assert counts(got) == counts(expected)
                assert got.erased == expected.erased
            continue
        event: StoreEvent
        if kind == "edit":
            assert isinstance(arg, tuple)
            channel, second, word, at = arg
            event = MessageEdited(TEAM, channel, ts_of(second), word, ts_of(at))
        elif kind == "delete":
            assert isinstance(arg, tuple)
            channel, second = arg
            event = MessageDeleted(TEAM, channel, ts_of(second))
        else:
            event = ChannelForgotten(TEAM, str(arg))
        assert counts(by_write.write([event])) == counts(in_bulk.write([event]))
        assert state(in_bulk) == state(by_write)
    assert state(in_bulk) == state(by_write)


@pytest.mark.slow
@settings(deadline=None)
@given(steps)
def test_post_rows_leaves_the_store_write_leaves(plan: list[tuple[str, object]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="chanctx-bulk-"))
    by_write = SqliteChannelStore(root / "write", synchronous="NORMAL")
    in_bulk = SqliteChannelStore(root / "bulk", synchronous="NORMAL")
    try:
        play(plan, by_write, in_bulk)
    finally:
        by_write.close()
        in_bulk.close()
        shutil.rmtree(root)


def test_message_row_is_the_row_of_the_equal_message() -> None:
    message = Message.model_construct(
        channel="C1",
        ts="1700000000.5",
        thread_ts="1700000000.5",
        user_id="U1",
        text="zürich ça",
        reply_count=2,
        is_bot=True,
        bot_id="B1",
        author_name="",
        reactions=(Reaction(name="eyes", count=2, users=("U2", "U3")),),
        reply_users=("U2",),
        latest_reply="1700000009.000001",
        edited_ts="1700000001.000000",
    )
    built = message_row(
        "1700000000.5",
        thread_ts="1700000000.5",
        user_id="U1",
        text="zürich ça",
        reply_count=2,
        is_bot=True,
        bot_id="B1",
        author_name="",
        reactions=[("eyes", 2, ["U2", "U3"])],
        reply_users=["U2"],
        latest_reply="1700000009.000001",
        edited_ts="1700000001.000000",
    )
    assert built == row_of(message)
    assert row_message("C1", built) == message


@settings(max_examples=200)
@given(st.text(max_size=40), st.integers(0, 2_000_000))
def test_words_scoped_in_sqlite_are_the_scoped_text(text: str, chan: int) -> None:
    """What the bulk insert indexes (``index_words`` split anywhere, the code added by SQL)
    is what the store scopes itself, so a later deletion removes exactly those terms."""
    code = channel_code(chan)
    db = sqlite3.connect(":memory:")
    (scoped,) = db.execute(f"SELECT {scoped_words_sql(code)}", (None, index_words(text))).fetchone()
    assert scoped == scoped_text(code, text)


@given(
    whole=st.integers(0, 10**10 - 1).map(str),
    frac=st.text("0123456789", min_size=0, max_size=9),
    root=st.booleans(),
)
def test_a_bulk_rows_key_is_its_ts_key_in_every_form(whole: str, frac: str, root: bool) -> None:
    """Slack's usual ten digits, a dot and six take a shorter way to the key than the rest."""
    for ts in {f"{whole}.{frac}" if frac else whole, f"{whole.zfill(10)}.{frac.ljust(6, '0')[:6]}"}:
        row = plain_reply_row(ts, ts, "U1", "x") if root else plain_message_row(ts, "U1", "x")
        assert row[0] == raw_ts_key(ts)
        assert row[2] == (raw_ts_key(ts) if root else None)
