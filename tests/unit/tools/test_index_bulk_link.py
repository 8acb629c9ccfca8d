"""Many messages older than the newest indexed one, applied in one refresh, are linked into
their conversations by one sorted pass: the index must end exactly as if each had been linked
on its own (neighbours, stream tails, replies' roots, thread counters, search results)."""

from __future__ import annotations

import random

import pytest
from chanctx.cache import ts_key
from chanctx.context import Message, Names
from chanctx.tools import ChannelIndex
from chanctx.tools._search import search
from hypothesis import given, settings
from hypothesis import strategies as st

CHANNEL = "C0BULK0001"
NAMES = Names(users={"U1": "Sam", "U2": "Ana"})
WORDS = ("deploy", "pool", "vault", "refund", "lunch", "checkout", "because")


def channel(drawn: list[tuple[int, int | None, int]]) -> list[Message]:
    """Top-level messages and replies (a reply names an earlier top-level message)."""
    out: list[Message] = []
    roots: list[str] = []
    for n, (word, parent, user) in enumerate(drawn):
        ts = f"{1_700_000_000 + n}.000100"
        text = f"{WORDS[word % len(WORDS)]} {WORDS[(word * 3) % len(WORDS)]} {n}"
        uid = ("U1", "U2")[user % 2]
        if parent is not None and roots:
            root = roots[parent % len(roots)]
            out.append(Message(channel=CHANNEL, ts=ts, text=text, user_id=uid, thread_ts=root))
        else:
            roots.append(ts)
            out.append(Message(channel=CHANNEL, ts=ts, text=text, user_id=uid))
    return out


def state(index: ChannelIndex) -> dict[str, object]:
    """What the ranking reads, by message key rather than slot."""
    rows, threads = index.rows, index.threads
    by_slot = {s: ts_key(index.message(s).ts) for s in range(index.capacity) if rows.live[s]}

    def key(slot: int) -> int | None:
        return by_slot.get(int(slot))

    out: dict[str, object] = {
        k: (key(rows.prev[s]), key(rows.next[s]), key(rows.root[s])) for s, k in by_slot.items()
    }
    for s, k in by_slot.items():
        tid = int(rows.tid[s])
        if tid >= 0:
            stats = (key(threads.tail[tid]), float(threads.count[tid]), float(threads.last[tid]))
            out[f"thread of {k}"] = stats
    for word in WORDS:
        with index.lock:
            found = search(
                index, intent=word, authors=(), since=None, names=NAMES, now=None,
                limit=20, per_thread=3,
            )  # fmt: skip
        out[word] = [(h.message.ts, round(h.score, 9)) for h in found.hits]
    return out


drawn_channels = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=50),
        st.one_of(st.none(), st.integers(min_value=0, max_value=40)),
        st.integers(min_value=0, max_value=1),
    ),
    min_size=60,
    max_size=120,
)


@pytest.mark.slow
@settings(deadline=None, max_examples=40)
@given(drawn_channels, st.integers(min_value=0, max_value=2**32 - 1), st.data())
def test_a_bulk_refresh_links_as_one_message_at_a_time(
    drawn: list[tuple[int, int | None, int]], seed: int, data: st.DataObject
) -> None:
    messages = channel(drawn)
    newest = data.draw(st.integers(min_value=1, max_value=len(messages) // 3))
    recent, older = messages[-newest:], messages[:-newest]
    random.Random(seed).shuffle(older)
    one_by_one, bulk = ChannelIndex(CHANNEL), ChannelIndex(CHANNEL)
    with one_by_one.lock, bulk.lock:
        for message in recent:
            one_by_one.upsert(message, NAMES)
            bulk.upsert(message, NAMES)
        for message in older:  # a search pulling older matches in: each linked on its own
            one_by_one.upsert(message, NAMES)
        for message in older:
            bulk.queue(ts_key(message.ts), message)
        assert bulk.refresh(NAMES) == len(older)  # 40 or more older than the newest: one pass
    assert state(bulk) == state(one_by_one)


@pytest.mark.slow
@settings(deadline=None, max_examples=40)
@given(drawn_channels, st.integers(min_value=0, max_value=2**32 - 1), st.data())
def test_a_sync_taking_many_older_messages_links_as_one_message_at_a_time(
    drawn: list[tuple[int, int | None, int]], seed: int, data: st.DataObject
) -> None:
    messages = channel(drawn)
    newest = data.draw(st.integers(min_value=1, max_value=len(messages) // 3))
    recent, older = messages[-newest:], messages[:-newest]
    rng = random.Random(seed)
    before = rng.sample(older, len(older) // 2)  # the previous search's older matches
    now = rng.sample(older, len(older) // 2)  # this search's: some kept, some new, some gone
    synced, one_by_one = ChannelIndex(CHANNEL), ChannelIndex(CHANNEL)
    kept = {m.ts for m in now}
    with synced.lock, one_by_one.lock:
        synced.sync([*recent, *before], NAMES)
        synced.sync([*recent, *now], NAMES)
        for message in [*recent, *before]:  # the same changes, each linked on its own
            one_by_one.upsert(message, NAMES)
        for message in sorted(now, key=lambda m: ts_key(m.ts)):
            one_by_one.upsert(message, NAMES)
        for message in before:
            if message.ts not in kept:
                one_by_one.remove(message.ts)
    assert state(synced) == state(one_by_one)
