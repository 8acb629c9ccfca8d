"""channel_context's ranking, made cheaper, answers exactly as it did.

``tests/support/dense_search.py`` is the ranking as it was before (arrays of the index's
capacity, ``np.isin`` over every slot); ``tools._search.search`` must give the same hits in
the same order with the same scores and signals, the same counts and time range, on random
channels (top-level messages and replies, some arriving out of order, edits and deletions
between searches) for random intents (common and rare words, a named person, an author asked
for, a reason asked, a month), windows (``since``) and hidden messages.

The index's links are built two ways (each older message linked on its own, by a bisection of
the channel's sorted keys or a walk back through its thread; or many at once, in one sorted
pass): the searches over both are compared with the model too. Each search is asked once more
with every candidate bounded first however few there are (``tools._scored``: only those whose
bound reaches the floor are scored in full), which must not change the answer either.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from chanctx.cache import ts_key
from chanctx.context import Message, Names
from chanctx.tools import ChannelIndex
from chanctx.tools._search import search
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import dense_search
from tests.unit.tools.test_index_bulk_link import state

CHANNEL = "C0DENSE001"
T0 = 1_772_366_400  # 2026-03-01T12:00:00Z
NAMES = Names(users={"UJO": "Joanna", "UNA": "Nate Ode", "UDEV": "Dev"})
USERS = ("UJO", "UNA", "UDEV", "")
WORDS = ("deploy", "pool", "failed", "because", "lunch", "checkout", "api", "Joanna", "v2.3")

# One message: (minutes after T0, the earlier message it replies to or None, user, words).
_message = st.tuples(
    st.integers(0, 400),
    st.one_of(st.none(), st.integers(0, 60)),
    st.sampled_from(USERS),
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=6),
)
_intent = st.lists(
    st.sampled_from(
        [*WORDS, "checkout-api", "why", "Joanna's", "Nate", "march", "2026", "dev", "zebra"]
    ),
    min_size=0,
    max_size=4,
).map(" ".join)


def _messages(drawn: list[tuple[int, int | None, str, list[str]]]) -> list[Message]:
    out: dict[str, Message] = {}
    roots: list[str] = []
    for position, (minute, parent, user, words) in enumerate(drawn):
        ts = f"{T0 + minute * 60}.{position:06d}"
        text = " ".join(words)
        if parent is not None and roots:
            root = roots[parent % len(roots)]
            if float(root) < float(ts):
                out[ts] = Message(
                    channel=CHANNEL, ts=ts, thread_ts=root, user_id=user,
                    bot_id=None if user else "B1", text=text,
                )  # fmt: skip
                continue
        roots.append(ts)
        out[ts] = Message(
            channel=CHANNEL, ts=ts, user_id=user, bot_id=None if user else "B1",
            text=text, reply_count=1 if parent is not None else 0,
        )  # fmt: skip
    return list(out.values())


def _answers(index: ChannelIndex, model: bool, prune: bool = False, **asked: Any) -> object:
    if model:
        run = dense_search.search
    elif prune:  # every candidate bounded first, however few: ``tools._scored``'s floor
        run = partial(search, prune_from=0)
    else:
        run = search
    with index.lock:
        found = run(index, names=NAMES, now=None, per_thread=2, **asked)
    hits = [(h.message.ts, h.score, h.signal) for h in found.hits]
    return hits, found.matches, found.scanned, found.time_range, found.keywords


@pytest.mark.slow
@settings(deadline=None, max_examples=150)
@given(
    st.lists(_message, min_size=1, max_size=70),
    st.lists(st.integers(0, 69), max_size=8),
    st.lists(st.tuples(_intent, st.sampled_from([(), ("joanna",), ("@Dev", "nate")]),
                       st.one_of(st.none(), st.integers(0, 400)), st.integers(1, 12)),
             min_size=1, max_size=4),
    st.randoms(use_true_random=False),
)  # fmt: skip
def test_the_ranking_equals_the_dense_one(
    drawn: list[tuple[int, int | None, str, list[str]]],
    gone: list[int],
    asks: list[tuple[str, tuple[str, ...], int | None, int]],
    rng: object,
) -> None:
    messages = _messages(drawn)
    newest_first = sorted(messages, key=lambda m: ts_key(m.ts), reverse=True)
    order = messages[:]
    rng.shuffle(order)  # type: ignore[attr-defined]
    one_by_one, bulk = ChannelIndex(CHANNEL), ChannelIndex(CHANNEL)
    with one_by_one.lock, bulk.lock:
        for message in order:  # out of order: each older one linked on its own
            one_by_one.upsert(message, NAMES)
        for message in newest_first[: max(1, len(messages) // 4)]:
            bulk.upsert(message, NAMES)
        for message in messages:  # the rest at once: one sorted pass
            bulk.queue(ts_key(message.ts), message)
        bulk.refresh(NAMES)
        for position in gone:  # deletions and edits between searches
            if position < len(messages):
                victim = messages[position]
                if position % 3:
                    one_by_one.remove(victim.ts)
                    bulk.queue(ts_key(victim.ts), None)
                else:
                    edited = victim.model_copy(update={"text": victim.text + " pool failed"})
                    one_by_one.upsert(edited, NAMES)
                    bulk.queue(ts_key(edited.ts), edited)
        bulk.refresh(NAMES)
    assert state(bulk) == state(one_by_one)  # links, roots and thread counters alike
    held = [m.ts for m in messages]
    for intent, authors, since_minute, limit in asks:
        since = None if since_minute is None else float(T0 + since_minute * 60)
        hidden = frozenset(held[:: max(1, limit)][:2]) if limit % 2 else frozenset()
        asked = {"intent": intent, "authors": authors, "since": since, "limit": limit,
                 "hidden": hidden}  # fmt: skip
        expected = _answers(one_by_one, True, **asked)
        assert _answers(one_by_one, False, **asked) == expected
        assert _answers(bulk, False, **asked) == expected
        assert _answers(one_by_one, False, prune=True, **asked) == expected


def test_a_long_thread_under_a_matching_root_ranks_as_before() -> None:
    # More replies than the walk back through a thread takes: the pass over every slot ends it.
    root = Message(channel=CHANNEL, ts=f"{T0}.000000", user_id="UJO", text="checkout failed")
    replies = [
        Message(channel=CHANNEL, ts=f"{T0 + 60 * n}.000001", thread_ts=root.ts, user_id="UNA",
                text="looking" if n % 2 else "still on it")
        for n in range(1, 150)
    ]  # fmt: skip
    index = ChannelIndex(CHANNEL)
    with index.lock:
        for message in [root, *replies]:
            index.upsert(message, NAMES)
    asked = {"intent": "why checkout", "authors": (), "since": None, "limit": 200,
             "hidden": frozenset()}  # fmt: skip
    index_answer = _answers(index, False, **asked)
    assert index_answer == _answers(index, True, **asked)
    assert index_answer[1] == 150  # type: ignore[index]  # the root and every reply


@pytest.mark.slow
def test_short_threads_in_a_large_index_rank_as_before() -> None:
    # Short threads beside many slots: their replies are reached back through each thread.
    index = ChannelIndex(CHANNEL)
    messages: list[Message] = []
    for n in range(20_000):
        ts = f"{T0 + 30 * n}.000000"
        text = "checkout failed again" if n % 997 == 0 else f"note {n % 50}"
        messages.append(
            Message(channel=CHANNEL, ts=ts, user_id="UJO", text=text, reply_count=int(n % 3 == 0))
        )
        if n % 3 == 0:
            messages.append(
                Message(channel=CHANNEL, ts=f"{T0 + 30 * n + 5}.000000", thread_ts=ts,
                        user_id="UNA", text="on it")
            )  # fmt: skip
    with index.lock:
        for message in messages:
            index.queue(ts_key(message.ts), message)
        index.refresh(NAMES)
    for intent in ("why checkout", "note 7", "Joanna failed", "checkout note"):
        asked = {"intent": intent, "authors": (), "since": None, "limit": 40,
                 "hidden": frozenset()}  # fmt: skip
        expected = _answers(index, True, **asked)
        assert _answers(index, False, **asked) == expected
        assert _answers(index, False, prune=True, **asked) == expected
