"""The change stream on a real redis-server: replicas that each receive part of Slack's events
(and some of them twice, Slack's retries landing anywhere) hold exactly the channel state one
process holds after receiving each event once; what one replica fetches from Slack, the other
learns without asking."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.replicas.feed import ChangeFeed
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.stores.redis_link import RedisLink
from chanctx.context import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.redis_server import RedisServer, redis_server
from tests.support.slack_events import BOT_ID, BOT_USER, CHANNEL, edit, message, reaction, ts

TEAM = "T0CHANGES1"
ME = SelfIdentity(user_id=BOT_USER, bot_id=BOT_ID)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as running:
        yield running


def _replica(link: RedisLink, name: str) -> tuple[ContextEngine, ChangeFeed]:
    engine = ContextEngine(me=ME)
    feed = ChangeFeed(link, engine, TEAM, name, retention=10_000)
    engine.learned = feed
    return engine, feed


# One Slack event: (kind, index of the message it is about, a number for text/ts variety).
events = st.lists(
    st.tuples(
        st.sampled_from(["post", "reply", "edit", "delete", "react", "unreact", "mention"]),
        st.integers(0, 11),
        st.integers(0, 3),
    ),
    min_size=1,
    max_size=40,
)


def _slack_event(kind: str, target: int, n: int, step: int) -> dict[str, Any]:
    at = ts(10 * target)
    if kind == "post":
        return message(at, f"message {target} version {n}", user=f"U{n % 2 + 1}")
    if kind == "reply":
        return message(
            ts(10 * target + 1 + n), f"reply {n} to {target}", thread_ts=ts(10 * (target % 4))
        )
    if kind == "edit":
        return edit(ts(500 + step), message(at, f"message {target}"), f"edited {n} at {step}")
    if kind == "delete":
        return {"type": "message", "subtype": "message_deleted", "channel": CHANNEL,
                "deleted_ts": at, "ts": ts(500 + step), "hidden": True}  # fmt: skip
    if kind in ("react", "unreact"):
        return reaction(ts(500 + step), at, ["eyes", "tada"][n % 2], user=f"U{n}",
                        added=kind == "react")  # fmt: skip
    return {"type": "app_mention", "channel": CHANNEL, "user": "U1", "ts": at,
            "text": f"<@{BOT_USER}> question {target}", "event_ts": at}  # fmt: skip


def _state(engine: ContextEngine) -> list[Message]:
    return engine.history.messages(CHANNEL)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events, st.randoms(use_true_random=False))
def test_replicas_fed_part_of_the_events_hold_what_one_process_holds(
    server: RedisServer, sequence: list[tuple[str, int, int]], rng: random.Random
) -> None:
    client = redis.Redis.from_url(server.url)
    client.flushdb()
    link = RedisLink(server.url)
    assert link.check()
    reference = ContextEngine(me=ME)
    replicas = [_replica(link, "a"), _replica(link, "b")]
    try:
        for step, (kind, target, n) in enumerate(sequence):
            event = _slack_event(kind, target, n, step)
            event_id = f"Ev{step:05d}"
            reference.handle(event)
            first = rng.randrange(2)
            assert replicas[first][1].publish(event, event_id) is True
            if rng.random() < 0.3:  # Slack's retry, to either replica
                assert replicas[rng.randrange(2)][1].publish(event, event_id) is False
            if rng.random() < 0.3:  # a replica reads the stream mid-way, as answers do
                replicas[rng.randrange(2)][1].catch_up()
        for engine, feed in replicas:
            feed.catch_up()
            assert _state(engine) == _state(reference)
    finally:
        link.close()
        client.close()


class _CountingSlack:
    """A Slack source that counts what it is asked (only history and names are used here)."""

    def __init__(self, history: list[Message]) -> None:
        self.calls: list[str] = []
        self._history = history

    def channel_history(
        self, channel: str, *, limit: int = 200, oldest: str | None = None
    ) -> list[Message]:
        self.calls.append("conversations.history")
        return list(self._history)

    def pinned_messages(self, channel: str) -> list[Message]:
        self.calls.append("pins.list")
        return []

    def user_name(self, user_id: str) -> str:
        self.calls.append("users.info")
        return {"U1": "Sam", "U2": "Ana", BOT_USER: "chanctx"}.get(user_id, user_id)

    def channel_name(self, channel_id: str) -> str:
        self.calls.append("conversations.info")
        return "general"

    def fetch_message(self, channel: str, ts: str) -> Message | None:
        self.calls.append("conversations.history")
        return next((m for m in self._history if m.ts == ts), None)

    def fetch_thread(self, channel: str, thread_ts: str) -> list[Message]:
        raise AssertionError("not used here")

    def fetch_thread_newest(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not used here")


def test_what_one_replica_fetched_from_slack_the_other_learns_without_asking(
    server: RedisServer,
) -> None:
    client = redis.Redis.from_url(server.url)
    client.flushdb()
    link = RedisLink(server.url)
    assert link.check()
    older = [Message(channel=CHANNEL, ts=ts(i), user_id="U1", text=f"old {i}") for i in range(5)]
    slacks = [_CountingSlack(older), _CountingSlack(older)]
    engines = [ContextEngine(me=ME, slack=slack) for slack in slacks]  # type: ignore[arg-type]
    feeds = [
        ChangeFeed(link, e, TEAM, name, retention=100)
        for e, name in zip(engines, "ab", strict=True)
    ]
    for engine, feed in zip(engines, feeds, strict=True):
        engine.learned = feed
    try:
        mention = message(ts(100), f"<@{BOT_USER}> what changed?")
        assert feeds[0].publish(mention, "Ev1")
        feeds[0].catch_up()
        built = engines[0].context_for(CHANNEL, ts(100))
        assert built is not None and len(built.snapshot.adjacent) == 5
        assert slacks[0].calls.count("conversations.history") == 1
        assert {"users.info", "conversations.info"} <= set(slacks[0].calls)
        feeds[1].catch_up()
        again = engines[1].context_for(CHANNEL, ts(100))
        assert again is not None and again.snapshot == built.snapshot
        assert slacks[1].calls == []  # history, names: all learned from the stream
    finally:
        link.close()
        client.close()


def test_the_stream_keeps_about_the_retention_and_a_late_replica_reads_what_is_kept(
    server: RedisServer,
) -> None:
    client = redis.Redis.from_url(server.url)
    client.flushdb()
    link = RedisLink(server.url)
    assert link.check()
    _, feed = _replica(link, "a")
    feed.retention = 200
    try:
        for n in range(2_000):
            feed.publish(message(ts(n), f"message {n}"), f"Ev{n}")
        kept = client.xlen(f"chanctx:{TEAM}:changes")
        assert 200 <= kept < 400  # MAXLEN ~ trims whole nodes (100 entries by default)
        late, late_feed = _replica(link, "late")
        late_feed.catch_up()
        assert len(late.history.messages(CHANNEL)) == kept  # the newest, from the stream
        assert late.history.messages(CHANNEL)[-1].text == "message 1999"
        assert not late_feed.gap()  # a fresh start reads what is kept; nothing is missing
    finally:
        link.close()
        client.close()
