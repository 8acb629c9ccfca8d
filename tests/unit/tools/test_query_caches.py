"""The query API's answer does not depend on what its caches remember: an index and a token
counter that served every earlier question, while messages were posted, edited and deleted,
answer exactly as an index built afresh from the channel's final messages with a new counter
(same chunks, same order, same rendering), and no deleted or replaced text is in the answer.
The window an index remembers is the one a fresh scan finds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from chanctx.cache import ts_key
from chanctx.context import Message, Names
from chanctx.context.tokens import PieceCounter
from chanctx.tools._columns import live_window
from chanctx.tools._index import ChannelIndex
from chanctx.tools._indexed import SearchScope
from chanctx.tools._query import QueryResult, query_channel
from hypothesis import given, settings
from hypothesis import strategies as st

CHANNEL = "C1CACHES"
NAMES = Names(users={"U1": "Priya", "U2": "Dev", "U3": "Sam"})
WORDS = ["deploy", "rollback", "checkout", "pool", "size", "dentist", "lunch", "because",
         "error", "502", "v2.30.4", "Found", "it:", "the", "was", "Friday"]  # fmt: skip
QUERIES = ["why did checkout fail", "pool size", "dentist", "deploy rollback Friday",
           "what happened"]  # fmt: skip
T0 = 1_700_000_000


@dataclass(frozen=True)
class Post:
    second: int
    user: str
    words: tuple[str, ...]
    reply_to: int | None  # the position of an earlier post whose thread it joins


@dataclass(frozen=True)
class Change:
    target: int  # which post, modulo how many were made
    new_words: tuple[str, ...] | None  # None: deleted


POSTS = st.builds(
    Post,
    second=st.integers(1, 5_000),
    user=st.sampled_from(["U1", "U2", "U3"]),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(tuple),
    reply_to=st.none() | st.integers(0, 30),
)
CHANGES = st.builds(
    Change,
    target=st.integers(0, 60),
    new_words=st.none() | st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(tuple),
)
STEPS = st.lists(st.one_of(POSTS, CHANGES), min_size=1, max_size=40)


def _apply(steps: list[Post | Change]) -> tuple[list[dict[str, Message]], list[str]]:
    """The channel's messages (by ts) after each step, and every text ever replaced or deleted."""
    live: dict[str, Message] = {}
    made: list[str] = []
    gone: list[str] = []
    states: list[dict[str, Message]] = []
    clock = 0
    for step in steps:
        if isinstance(step, Post):
            clock += step.second
            stamp = f"{T0 + clock}.000100"
            asked = step.reply_to
            root = made[asked] if asked is not None and asked < len(made) else None
            if root is not None and (root not in live or live[root].is_reply):
                root = None
            extra = {"thread_ts": root, "is_reply": True} if root else {}
            live[stamp] = Message.model_validate(
                {"channel": CHANNEL, "ts": stamp, "user_id": step.user,
                 "text": " ".join(step.words), **extra}
            )  # fmt: skip
            made.append(stamp)
        elif made and made[step.target % len(made)] in live:
            stamp = made[step.target % len(made)]
            old = live.pop(stamp)
            gone.append(old.text)
            if step.new_words is not None:
                live[stamp] = old.model_copy(update={"text": " ".join(step.new_words)})
        states.append(dict(live))
    return states, gone


def _ask(index: ChannelIndex, counter: PieceCounter, live: dict[str, Message], query: str,
         budget: int) -> QueryResult:  # fmt: skip
    def thread_of(root_ts: str) -> list[Message]:
        root = [live[root_ts]] if root_ts in live else []
        replies = [m for m in live.values() if m.is_reply and m.root_ts == root_ts]
        return root + sorted(replies, key=lambda m: float(m.ts))

    with index.lock:
        index.refresh(NAMES)
    return query_channel(
        SearchScope(index), query, channel_label="#caches", names=NAMES, counter=counter,
        token_budget=budget, fmt="json", thread_of=thread_of,
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(steps=STEPS, query=st.sampled_from(QUERIES), budget=st.sampled_from([64, 300, 2_000]))
def test_a_long_served_index_and_counter_answer_as_fresh_ones(
    steps: list[Post | Change], query: str, budget: int
) -> None:
    states, gone = _apply(steps)
    served, counter = ChannelIndex(CHANNEL), PieceCounter("claude_v4_8")
    before: dict[str, Message] = {}
    for live in states:  # each step reaches the index as the cache would queue it, then a query
        for stamp in before.keys() | live.keys():
            if before.get(stamp) is not live.get(stamp):
                served.queue(ts_key(stamp), live.get(stamp))
        _ask(served, counter, live, query, budget)
        before = live
    final = states[-1]
    fresh = ChannelIndex(CHANNEL)
    for stamp in sorted(final, key=float):
        fresh.upsert(final[stamp], NAMES)
    answer = _ask(served, counter, final, query, budget)
    assert answer == _ask(fresh, PieceCounter("claude_v4_8"), final, query, budget)
    shown = {m.text for m in final.values()}
    for text in set(gone) - shown:
        assert f": {text}\\n" not in answer.rendered and not answer.rendered.endswith(f": {text}")


@settings(max_examples=60, deadline=None)
@given(steps=STEPS, since=st.none() | st.integers(0, 60_000), hide=st.integers(0, 3))
def test_the_remembered_window_is_a_fresh_scans(
    steps: list[Post | Change], since: int | None, hide: int
) -> None:
    states, _ = _apply(steps)
    index = ChannelIndex(CHANNEL)
    before: dict[str, Message] = {}
    for live in states:
        for message in live.values():
            index.upsert(message, NAMES)
        for stamp in before.keys() - live.keys():
            index.remove(stamp)
        before = live
        hidden = sorted(live)[:hide]
        cutoff = None if since is None else float(T0 + since)
        remembered = index.window(cutoff, hidden)
        assert index.window(cutoff, hidden) == remembered
        slots = [s for s in map(index.slot, hidden) if s is not None]
        assert remembered == live_window(index.rows, len(index), cutoff, slots)
        mask = index.rows.live[: index.capacity].copy()
        if cutoff is not None:
            mask &= index.rows.ts[: index.capacity] >= cutoff
        mask[slots] = False
        chosen = np.flatnonzero(mask)
        keys = index.rows.key[chosen]
        expected = (
            (len(chosen), int(chosen[keys.argmin()]), int(chosen[keys.argmax()]))
            if len(chosen)
            else (0, -1, -1)
        )
        assert remembered == expected
