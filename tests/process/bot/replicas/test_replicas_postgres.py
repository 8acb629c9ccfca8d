"""Replicas on one PostgreSQL channel store and one Redis (`chanctx run --http --database-url`).

Two replicas are fed a channel, each event delivered to one of them: what was delivered to one
is found through the other's query API. The change stream is then dropped (as if Redis had
trimmed it all) and a third replica starts with an empty data dir: it answers with the whole
history from the shared store, and Slack sees no read from it.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path

import pytest
import redis
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import PostgresChannelStore
from chanctx.manifest_store import namespace

from bench._process import BotProcess, post_signed
from tests.support.postgres_server import PostgresServer, postgres
from tests.support.redis_server import redis_server
from tests.support.replica_processes import readiness, wait_for, wait_ready
from tests.support.replica_store import api_keys, database, found, start_replicas, store_replica
from tests.support.slack_events import STATE, TEAM, envelope, message, ts

__all__ = ["postgres"]

pytestmark = pytest.mark.slow

MESSAGES = 300
READS = ("conversations.history", "conversations.replies")
EARLY_FACT = "the standby generator key hangs in cabinet 7 violet"
LATE_FACT = "the canary region for release 88 is ap-south orchid"


def text_of(n: int) -> str:
    if n == 5:
        return EARLY_FACT
    return f"status note {n}: queue depth {n % 13}, builds green"


def stored_messages(url: str) -> int:
    store = PostgresChannelStore(url)
    try:
        return store.stats().messages
    finally:
        store.close()


def slack_reads(slack: FakeSlackAPI) -> int:
    counts = slack.call_counts()
    return sum(counts.get(method, 0) for method in READS)


def test_replicas_share_one_postgres_store(tmp_path: Path, postgres: PostgresServer) -> None:
    url = database(postgres)
    keys = api_keys(tmp_path)
    with (
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
        redis_server(tmp_path / "redis") as server,
    ):
        bots: list[BotProcess] = [
            store_replica(tmp_path / name, slack.url, claude.url, server.url, keys, url)
            for name in ("a", "b")
        ]
        third = store_replica(tmp_path / "c", slack.url, claude.url, server.url, keys, url)
        try:
            start_replicas(bots)
            first, second = bots
            for n in range(MESSAGES):
                event = message(ts(n), text_of(n), user="U2" if n % 2 else "U1")
                slack.mirror_event(event)
                status = post_signed(bots[n % 2].url, envelope(event))
                assert status == 200, bots[n % 2].log_tail()
            # Both replicas see the early fact, delivered to the first one only.
            for bot in bots:
                wait_for(lambda b=bot: found(b, "where is the generator key?", "cabinet 7"),
                         60, "the early fact on every replica")  # fmt: skip
            # One message through the first replica, then the second's query API: how long?
            late = message(ts(MESSAGES + 1), LATE_FACT)
            slack.mirror_event(late)
            sent = time.monotonic()
            assert post_signed(first.url, envelope(late)) == 200
            wait_for(lambda: found(second, "canary region for release 88", "orchid"), 30,
                     "a message delivered to one replica, through the other", every=0.01)  # fmt: skip
            visible = time.monotonic() - sent
            assert stored_messages(url) == MESSAGES + 1  # each once, in the one store
            reads_before = slack_reads(slack)

            # The stream is gone (trimmed, a new Redis): only the store can tell the history.
            redis.Redis.from_url(server.url).delete(namespace(TEAM) + "changes")
            started = time.monotonic()
            third.start(timeout=300)
            wait_ready(third, timeout=120)
            ready_after = time.monotonic() - started
            assert found(third, "where is the generator key?", "cabinet 7"), third.log_tail()
            assert found(third, "canary region for release 88", "orchid")
            assert slack_reads(slack) == reads_before, slack.call_counts()
            assert readiness(third) == 200
        finally:
            for bot in (*bots, third):
                bot.stop()
    print(
        f"replicas on PostgreSQL: {MESSAGES + 1} messages, visible across replicas after "
        f"{visible:.3f} s, third replica ready in {ready_after:.1f} s with "
        f"{slack_reads(slack) - reads_before} Slack reads"
    )
