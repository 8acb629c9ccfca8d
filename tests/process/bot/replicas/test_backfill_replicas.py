"""The backfill with replicas on a real redis-server: one replica at a time pages Slack (the
one holding the workspace's backfill lease), its pages and cursors reach the other replica's
own store through the change stream, and when it stops the other takes over from there."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from chanctx.bot.core.backfill_plan import HISTORY
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replicas.backfill_lease import BackfillLease
from chanctx.bot.replicas.feed import ChangeFeed
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.stores.redis_link import RedisLink
from chanctx.cache.channel_store import StoreEvent

from tests.support import redis_server as shared
from tests.support.backfill_channel import (
    MINUTE,
    backfill_on,
    backfill_state,
    missing_from_store,
    run,
    served,
)
from tests.support.slack_events import BOT_ID, BOT_USER, CHANNEL, TEAM

ME = SelfIdentity(user_id=BOT_USER, bot_id=BOT_ID)


server, link = shared.server, shared.link  # the module's redis-server, a RedisLink to it


class Replica:
    """One replica's backfill, store and change feed (its own data dir)."""

    def __init__(self, name: str, data: Path, fake: FakeSlackAPI, link: RedisLink) -> None:
        self.lease = BackfillLease(link.client, TEAM, name, seconds=30.0)
        self.feed: ChangeFeed | None = None
        self.backfill, self.opened = backfill_on(
            data, fake, gate=self.lease, share=lambda events: self._share(events)
        )
        engine = ContextEngine(me=ME, record=self.backfill.record)
        self.feed = ChangeFeed(link, engine, TEAM, name, retention=10_000)

    def _share(self, events: Sequence[StoreEvent]) -> None:
        assert self.feed is not None
        self.feed.backfilled(events)


def test_one_replica_pages_slack_and_the_other_stores_its_pages(
    link: RedisLink, tmp_path: Path
) -> None:
    state = backfill_state(100, threads=4, replies=20)
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        a = Replica("a", tmp_path / "a", fake, link)
        b = Replica("b", tmp_path / "b", fake, link)
        try:
            a.backfill.step()  # a looks first: it holds the lease
            deadline = time.monotonic() + 60.0
            while a.backfill.pending and time.monotonic() < deadline:
                b.backfill.step()  # b never pages while a holds it
                time.sleep(min(a.backfill.step(), MINUTE))
            assert not a.backfill.pending and not b.backfill.pending
            # As for one process (100 messages in pages of 15, 4 threads of two pages each).
            assert served(fake, "conversations.history") == 7
            assert served(fake, "conversations.replies") == 8
            assert b.feed is not None
            b.feed.catch_up()  # each entry is committed to b's store as it is applied
            assert missing_from_store(b.opened.store, state) == (set(), set())
            cursor = b.opened.store.cursor(TEAM, CHANNEL, HISTORY)
            assert cursor is not None and cursor.complete
        finally:
            a.opened.close()
            b.opened.close()


def test_when_the_replica_paging_stops_the_other_goes_on_from_its_pages(
    link: RedisLink, tmp_path: Path
) -> None:
    state = backfill_state(150, threads=3, replies=4)
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        a = Replica("a", tmp_path / "a", fake, link)
        b = Replica("b", tmp_path / "b", fake, link)
        try:
            run(a.backfill, pages=4)
            a.backfill.stop()  # releases the lease
            at_stop = served(fake, "conversations.history")
            assert b.feed is not None
            b.feed.catch_up()  # a's pages and cursors, into b's own store
            run(b.backfill)
            assert missing_from_store(b.opened.store, state) == (set(), set())
            # Ten pages of 15 in all: b asked for those after a's last stored one, and at
            # most the page a had in flight again.
            assert served(fake, "conversations.history") - at_stop <= 10 - 4 + 1
            assert served(fake, "conversations.history") <= 10 + 1
        finally:
            a.opened.close()
            b.opened.close()


def test_a_lease_is_one_replicas_until_it_lapses_or_is_released(link: RedisLink) -> None:
    a = BackfillLease(link.client, TEAM, "a", seconds=0.2)
    b = BackfillLease(link.client, TEAM, "b", seconds=0.2)
    assert a.held() and a.held() and not b.held()
    a.release()
    assert b.held() and not a.held()
    b.release()
