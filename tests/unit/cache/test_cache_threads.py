"""ThreadReplyCache and ThreadStarterCache: fetch once, then stay current from events."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from chanctx.cache import CachedThread, FakeClock, ThreadReplyCache, ThreadStarterCache, ts_key
from chanctx.context import Message
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = 1_700_000_000


def ts(seconds: int, micros: int = 0) -> str:
    return f"{BASE + seconds}.{micros:06d}"


def root(at: int, *, channel: str = "C1", replies: int = 0, **kw: object) -> Message:
    return Message.model_validate(
        {
            "channel": channel,
            "ts": ts(at),
            "thread_ts": ts(at) if replies else None,
            "text": f"root {at}",
            "reply_count": replies,
            **kw,
        }
    )


def reply(
    at: int, root_at: int, text: str = "", *, channel: str = "C1", user: str = "U2"
) -> Message:
    return Message(
        channel=channel, ts=ts(at), thread_ts=ts(root_at), user_id=user, text=text or f"r{at}"
    )


class FakeSlack:
    """Records every fetch; answers from ``threads``/``messages``; raises ``error`` if set."""

    def __init__(self) -> None:
        self.threads: dict[tuple[str, str], list[Message]] = {}
        self.messages: dict[tuple[str, str], Message] = {}
        self.calls: list[tuple[str, str]] = []
        self.error: Exception | None = None

    def add_thread(self, head: Message, *replies: Message) -> None:
        self.threads[(head.channel, head.ts)] = [head, *replies]

    def fetch_thread(self, channel: str, thread_ts: str) -> Sequence[Message]:
        self.calls.append((channel, thread_ts))
        if self.error is not None:
            raise self.error
        return list(self.threads.get((channel, thread_ts), []))

    def fetch_message(self, channel: str, ts: str) -> Message | None:
        self.calls.append((channel, ts))
        if self.error is not None:
            raise self.error
        return self.messages.get((channel, ts))


def tss(messages: Sequence[Message]) -> list[str]:
    return [m.ts for m in messages]


@pytest.fixture
def slack() -> FakeSlack:
    fake = FakeSlack()
    fake.add_thread(root(1, replies=2), reply(2, 1), reply(3, 1))
    fake.add_thread(root(10, replies=1), reply(11, 10))
    fake.add_thread(root(20, replies=1), reply(21, 20))
    return fake


# -- ThreadReplyCache -------------------------------------------------------------------------


def test_miss_fetches_once_then_hits(slack: FakeSlack) -> None:
    clock = FakeClock(100.0)
    cache = ThreadReplyCache(slack, clock=clock)
    thread = cache.get("C1", ts(1))
    assert isinstance(thread, CachedThread)
    assert thread.root is not None and thread.root.ts == ts(1)
    assert tss(thread.replies) == [ts(2), ts(3)]
    assert (thread.channel, thread.thread_ts, thread.fetched_at) == ("C1", ts(1), 100.0)
    assert tss(thread.messages) == [ts(1), ts(2), ts(3)]
    assert cache.get("C1", ts(1)) is thread
    assert (cache.hits, cache.misses, cache.fetches) == (1, 1, 1)
    assert slack.calls == [("C1", ts(1))]


def test_ttl_expiry_refetches_exactly_once(slack: FakeSlack) -> None:
    clock = FakeClock()
    cache = ThreadReplyCache(slack, ttl_seconds=300, clock=clock)
    cache.get("C1", ts(1))
    clock.advance(299.5)
    cache.get("C1", ts(1))
    assert cache.fetches == 1
    clock.advance(0.5)  # exactly at the TTL: expired
    assert cache.peek("C1", ts(1)) is None
    refreshed = cache.get("C1", ts(1))
    cache.get("C1", ts(1))
    assert cache.fetches == 2 and refreshed.fetched_at == 300.0
    assert (cache.hits, cache.misses) == (2, 2)


def test_size_bound_evicts_the_least_recently_used(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, max_threads=2, clock=FakeClock())
    cache.get("C1", ts(1))
    cache.get("C1", ts(10))
    cache.get("C1", ts(1))  # thread 1 is now the most recent
    cache.get("C1", ts(20))  # evicts thread 10
    assert cache.peek("C1", ts(10)) is None
    assert cache.peek("C1", ts(1)) is not None and cache.peek("C1", ts(20)) is not None
    assert len(cache) == 2
    cache.get("C1", ts(10))
    assert cache.fetches == 4


def test_peek_neither_fetches_nor_counts(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    assert cache.peek("C1", ts(1)) is None
    assert (cache.hits, cache.misses, cache.fetches, slack.calls) == (0, 0, 0, [])


def test_on_message_appends_in_order_without_fetching(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    thread = cache.get("C1", ts(1))
    assert cache.on_message(reply(5, 1, user="U5"))
    assert cache.on_message(reply(4, 1, user="U4"))  # late, out of order
    assert tss(cache.get("C1", ts(1)).replies) == [ts(2), ts(3), ts(4), ts(5)]
    assert thread.root is not None
    assert (thread.root.reply_count, thread.root.latest_reply) == (4, ts(5))
    assert set(thread.root.reply_users) >= {"U4", "U5"}
    assert cache.fetches == 1 and len(slack.calls) == 1
    assert not cache.on_message(reply(31, 30))  # thread not cached: nothing to do, no fetch
    assert not cache.on_message(reply(12, 10, channel="C2"))
    assert cache.fetches == 1


def test_redelivered_reply_replaces_instead_of_duplicating(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    cache.get("C1", ts(1))
    cache.on_message(reply(4, 1, "first"))
    cache.on_message(reply(4, 1, "again"))
    cache.on_message(reply(2, 1, "refetched copy"))
    thread = cache.get("C1", ts(1))
    assert [m.text for m in thread.replies] == ["refetched copy", "r3", "again"]
    assert thread.root is not None and thread.root.reply_count == 3


def test_a_root_event_replaces_the_cached_root_but_keeps_its_count(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    cache.get("C1", ts(1))
    assert cache.on_message(root(1, text="root, as an event copy"))
    thread = cache.get("C1", ts(1))
    assert thread.root is not None
    assert (thread.root.text, thread.root.reply_count) == ("root, as an event copy", 2)


def test_appending_does_not_extend_the_ttl(slack: FakeSlack) -> None:
    clock = FakeClock()
    cache = ThreadReplyCache(slack, ttl_seconds=300, clock=clock)
    cache.get("C1", ts(1))
    clock.advance(200)
    cache.on_message(reply(4, 1))
    clock.advance(100)
    healed = cache.get("C1", ts(1))  # the refetch answers what the platform has
    assert cache.fetches == 2 and tss(healed.replies) == [ts(2), ts(3)]


def test_edits_reach_cached_roots_and_replies(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    cache.get("C1", ts(1))
    cache.on_edit("C1", ts(3), text="fixed typo", edited_ts=ts(50))
    cache.on_edit("C1", ts(1), text="better question")
    cache.on_edit("C1", ts(99), text="unknown: ignored")
    cache.on_edit("C2", ts(3), text="other channel: ignored")
    thread = cache.get("C1", ts(1))
    assert thread.root is not None and thread.root.text == "better question"
    assert [(m.text, m.edited_ts) for m in thread.replies] == [("r2", None), ("fixed typo", ts(50))]
    assert cache.fetches == 1


def test_deletes_reach_cached_threads(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    cache.get("C1", ts(1))
    cache.get("C1", ts(10))
    cache.on_delete("C1", ts(3))
    thread = cache.get("C1", ts(1))
    assert tss(thread.replies) == [ts(2)]
    assert thread.root is not None
    assert (thread.root.reply_count, thread.root.latest_reply) == (1, ts(2))
    cache.on_delete("C1", ts(1))  # a root with replies: tombstone
    assert thread.root is not None and thread.root.deleted and thread.root.text == ""
    cache.on_delete("C1", ts(2))  # its last reply: the thread is gone
    assert thread.root is None and thread.replies == []
    ten = cache.get("C1", ts(10))
    cache.on_delete("C1", ts(11))
    cache.on_delete("C1", ts(10))  # no replies left: nothing to show
    assert ten.root is None
    assert cache.fetches == 2


def test_invalidate_forces_a_refetch(slack: FakeSlack) -> None:
    cache = ThreadReplyCache(slack, clock=FakeClock())
    cache.get("C1", ts(1))
    cache.invalidate("C1", ts(1))
    cache.invalidate("C1", ts(77))  # unknown: fine
    cache.get("C1", ts(1))
    assert cache.fetches == 2


def test_a_fetch_error_propagates_and_loses_nothing(slack: FakeSlack) -> None:
    clock = FakeClock()
    cache = ThreadReplyCache(slack, ttl_seconds=300, clock=clock)
    kept = cache.get("C1", ts(1))
    cache.on_message(reply(4, 1))
    slack.error = TimeoutError("slack is down")
    with pytest.raises(TimeoutError, match="slack is down"):
        cache.get("C1", ts(10))
    assert cache.peek("C1", ts(10)) is None
    assert cache.get("C1", ts(1)) is kept and tss(kept.replies) == [ts(2), ts(3), ts(4)]
    slack.error = None
    assert cache.get("C1", ts(10)).root is not None
    assert cache.fetches == 3


def test_fetched_threads_are_ordered_and_deduplicated() -> None:
    slack = FakeSlack()
    slack.add_thread(
        root(1, replies=3),
        reply(4, 1),
        reply(2, 1, "old copy"),
        reply(2, 1, "new copy"),
        reply(3, 1),
        root(9),  # not part of this thread
    )
    thread = ThreadReplyCache(slack, clock=FakeClock()).get("C1", ts(1))
    assert tss(thread.replies) == [ts(2), ts(3), ts(4)]
    assert thread.replies[0].text == "new copy"
    empty = ThreadReplyCache(FakeSlack(), clock=FakeClock()).get("C1", ts(1))
    assert empty.root is None and empty.replies == []


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"ttl_seconds": -1.0}, "ttl_seconds"),
        ({"ttl_seconds": float("nan")}, "ttl_seconds"),
        ({"max_threads": 0}, "max_threads"),
        ({"max_threads": 1.5}, "max_threads"),
    ],
)
def test_thread_cache_rejects_bad_options(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        ThreadReplyCache(FakeSlack(), **kwargs)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(2, 40), max_size=40), st.lists(st.integers(2, 40), max_size=10))
def test_write_through_matches_a_full_refetch(events: list[int], deletes: list[int]) -> None:
    """Reply events in any order (with redeliveries) and deletes leave what a refetch shows."""
    slack = FakeSlack()
    slack.add_thread(root(1))
    cache = ThreadReplyCache(slack, clock=FakeClock())
    thread = cache.get("C1", ts(1))
    live: set[int] = set()
    for at in events:
        cache.on_message(reply(at, 1, user=f"U{at % 4}"))
        live.add(at)
    for at in deletes:
        cache.on_delete("C1", ts(at))
        live.discard(at)
    keys = [ts_key(m.ts) for m in thread.replies]
    assert keys == sorted(set(keys))
    assert tss(thread.replies) == [ts(at) for at in sorted(live)]
    assert thread.root is not None
    assert thread.root.reply_count == len(live)
    assert thread.root.latest_reply == (ts(max(live)) if live else None)
    assert set(thread.root.reply_users) == {f"U{at % 4}" for at in live}
    assert cache.fetches == 1


# -- ThreadStarterCache -----------------------------------------------------------------------


@pytest.fixture
def starters() -> FakeSlack:
    fake = FakeSlack()
    fake.messages[("C1", ts(1))] = root(1, replies=2)
    fake.messages[("C1", ts(5))] = root(5)
    return fake


def test_starter_fetched_on_miss_then_cached(starters: FakeSlack) -> None:
    cache = ThreadStarterCache(starters, clock=FakeClock())
    first = cache.get("C1", ts(1))
    assert first is not None and first.text == "root 1"
    assert cache.get("C1", ts(1)) is first
    assert (cache.hits, cache.misses, cache.fetches) == (1, 1, 1)


def test_a_missing_starter_is_not_cached(starters: FakeSlack) -> None:
    cache = ThreadStarterCache(starters, clock=FakeClock())
    assert cache.get("C1", ts(9)) is None
    starters.messages[("C1", ts(9))] = root(9)
    found = cache.get("C1", ts(9))
    assert found is not None and found.ts == ts(9)
    assert cache.fetches == 2


def test_starter_ttl_and_bound(starters: FakeSlack) -> None:
    clock = FakeClock()
    cache = ThreadStarterCache(starters, ttl_seconds=6 * 3600, max_entries=1, clock=clock)
    cache.get("C1", ts(1))
    clock.advance(6 * 3600 - 1)
    cache.get("C1", ts(1))
    assert cache.fetches == 1
    clock.advance(1)
    cache.get("C1", ts(1))
    assert cache.fetches == 2
    cache.get("C1", ts(5))  # the bound is 1: evicts ts 1
    assert cache.peek("C1", ts(1)) is None and len(cache) == 1


def test_put_writes_through_and_ignores_replies(starters: FakeSlack) -> None:
    cache = ThreadStarterCache(starters, clock=FakeClock())
    assert cache.put(root(7, text="seen in an event"))
    assert not cache.put(reply(8, 7))
    got = cache.get("C1", ts(7))
    assert got is not None and got.text == "seen in an event"
    assert cache.peek("C1", ts(8)) is None
    assert cache.fetches == 0 and cache.hits == 1
    cache.get("C1", ts(1))
    cache.put(root(1, text="event copy without thread metadata"))
    kept = cache.peek("C1", ts(1))
    assert kept is not None and kept.reply_count == 2 and kept.text.startswith("event copy")


def test_starter_edit_keeps_ttl_and_delete_tombstones_or_forgets(starters: FakeSlack) -> None:
    clock = FakeClock()
    cache = ThreadStarterCache(starters, ttl_seconds=100, clock=clock)
    cache.get("C1", ts(1))
    cache.get("C1", ts(5))
    clock.advance(60)
    cache.on_edit("C1", ts(1), text="edited", edited_ts=ts(2))
    edited = cache.peek("C1", ts(1))
    assert edited is not None and (edited.text, edited.edited_ts) == ("edited", ts(2))
    cache.on_delete("C1", ts(1))  # has replies: tombstone
    stone = cache.get("C1", ts(1))
    assert stone is not None and stone.deleted and stone.text == ""
    cache.on_delete("C1", ts(5))  # no replies: forgotten
    assert cache.peek("C1", ts(5)) is None
    cache.on_edit("C1", ts(42), text="unknown: ignored")
    cache.on_delete("C1", ts(42))
    clock.advance(40)  # the edit did not extend the TTL
    assert cache.peek("C1", ts(1)) is None
    cache.invalidate("C1", ts(1))


def test_starter_fetch_error_propagates(starters: FakeSlack) -> None:
    cache = ThreadStarterCache(starters, clock=FakeClock())
    cache.get("C1", ts(1))
    starters.error = ConnectionError("rate limited")
    with pytest.raises(ConnectionError):
        cache.get("C1", ts(5))
    assert cache.get("C1", ts(1)) is not None
    with pytest.raises(ValueError, match="max_entries"):
        ThreadStarterCache(starters, max_entries=0)


def test_fake_clock_only_moves_forward() -> None:
    clock = FakeClock(5.0)
    assert clock() == 5.0 and clock.advance(2.5) == 7.5
    with pytest.raises(ValueError, match="-1"):
        clock.advance(-1)
