"""The change stream into a replica's own channel store, on a real redis-server: an entry the
store refuses (its disk full) is neither skipped nor half applied; it waits, and is applied in
order once the store takes it. What another replica fetched from Slack is kept in the store
with its history cursor, so the channel counts as held after a restart."""

from __future__ import annotations

from pathlib import Path

from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.replicas.feed import ChangeFeed
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.stores.redis_link import RedisLink
from chanctx.cache.channel_store import (
    ChannelForgotten,
    MessagePosted,
    SqliteChannelStore,
    StoreFull,
)
from chanctx.context import Message

from tests.support import redis_server as shared
from tests.support.slack_events import BOT_ID, BOT_USER, CHANNEL, message, ts

TEAM = "T0OWNSTORE"
ME = SelfIdentity(user_id=BOT_USER, bot_id=BOT_ID)


server, link = shared.server, shared.link  # the module's redis-server, a RedisLink to it


def fill_up(store: SqliteChannelStore) -> None:
    """Another channel's messages until the store's file is at its page limit: batches of
    ten, then one at a time, until not even one more fits."""
    n = 0
    for size in (10, 1):
        for _ in range(1_000):
            events = [
                MessagePosted(TEAM, Message(channel="C0FILLER1", ts=ts(n + i), text="x" * 3000))
                for i in range(size)
            ]
            try:
                store.write(events)
            except StoreFull:
                break
            n += size
        else:
            raise AssertionError("the page limit never filled the store")


def test_an_entry_the_store_refuses_waits_and_is_applied_once_it_fits(
    link: RedisLink, tmp_path: Path
) -> None:
    store = SqliteChannelStore(tmp_path, page_limit=120)
    opened = OpenStore(store)
    engine = ContextEngine(me=ME, record=ChannelRecord(opened, TEAM))
    feed = ChangeFeed(link, engine, TEAM, "b", retention=1_000)
    sender = ChangeFeed(link, ContextEngine(me=ME), TEAM, "a", retention=1_000)
    try:
        fill_up(store)
        for n in range(3):
            assert sender.publish(message(ts(n), f"incident note {n} " + "y" * 3000), f"Ev{n}")
        feed.catch_up()
        # Refused: not in the caches, not in the store, and the stream position stays put.
        assert engine.history.messages(CHANNEL) == []
        assert store.messages(TEAM, CHANNEL) == []
        assert feed.applied == 0 and feed.last == "0-0"
        assert opened.problem is not None and "not stored" in opened.problem
        store.write([ChannelForgotten(TEAM, "C0FILLER1")])  # the disk has room again
        feed.catch_up()
        expected = [f"incident note {n}" for n in range(3)]
        assert [m.text.split(" y")[0] for m in store.messages(TEAM, CHANNEL)] == expected
        assert [m.text.split(" y")[0] for m in engine.history.messages(CHANNEL)] == expected
        assert feed.applied == 3 and feed.skipped == 0
    finally:
        opened.close()


class _Slack:
    """A Slack source that holds a channel's history (only history is asked here)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.calls: list[str] = []

    def channel_history(
        self, channel: str, *, limit: int = 200, oldest: str | None = None
    ) -> list[Message]:
        self.calls.append("conversations.history")
        return self.messages[-limit:]

    def user_name(self, user_id: str) -> str:
        return user_id

    def channel_name(self, channel_id: str) -> str:
        return "general"


def test_a_history_another_replica_fetched_is_held_in_this_ones_store(
    link: RedisLink, tmp_path: Path
) -> None:
    older = [Message(channel=CHANNEL, ts=ts(i), user_id="U1", text=f"old {i}") for i in range(5)]
    slack = _Slack(older)
    fetcher = ContextEngine(me=ME, slack=slack)  # type: ignore[arg-type]
    fetcher.learned = ChangeFeed(link, fetcher, TEAM, "a", retention=1_000)
    fetcher.warm_channel(CHANNEL)
    assert slack.calls == ["conversations.history"]
    opened = OpenStore(SqliteChannelStore(tmp_path))
    record = ChannelRecord(opened, TEAM)
    learner = ContextEngine(me=ME, record=record)
    ChangeFeed(link, learner, TEAM, "b", retention=1_000).catch_up()
    opened.close()  # what was queued is committed
    reopened = OpenStore(SqliteChannelStore(tmp_path))
    try:
        after_restart = ChannelRecord(reopened, TEAM)
        assert after_restart.knows_history(CHANNEL)
        assert [m.text for m in after_restart.recent(CHANNEL, 10)] == [m.text for m in older]
    finally:
        reopened.close()


def test_a_channel_deleted_on_one_replica_is_forgotten_by_every_replicas_store(
    link: RedisLink, tmp_path: Path
) -> None:
    stores = [OpenStore(SqliteChannelStore(tmp_path / name)) for name in ("a", "b")]
    engines = [ContextEngine(me=ME, record=ChannelRecord(opened, TEAM)) for opened in stores]
    feeds = [
        ChangeFeed(link, engine, TEAM, name, retention=1_000)
        for engine, name in zip(engines, ("a", "b"), strict=True)
    ]
    try:
        for n in range(4):
            assert feeds[n % 2].publish(message(ts(n), f"launch code {n} is 0000"), f"Ev{n}")
        assert feeds[1].publish({"type": "channel_deleted", "channel": CHANNEL}, "EvGone")
        renamed = {"type": "channel_rename", "channel": {"id": "C0OTHER01", "name": "ops"}}
        assert feeds[0].publish(renamed, "EvRename")
        for feed in feeds:
            feed.catch_up()
        for engine, opened in zip(engines, stores, strict=True):
            assert opened.store.messages(TEAM, CHANNEL) == []
            assert engine.history.messages(CHANNEL) == []
            assert opened.store.channel_names(TEAM).get("C0OTHER01") == "ops"
    finally:
        for opened in stores:
            opened.close()
