"""PostgreSQL stopped and started again under two `chanctx run --http` replicas, mid-stream.

While the database is down every event is refused (non-2xx: Slack delivers it again) and
``/readyz`` is 503 saying why; once it is back both replicas take events again without a
restart. Slack's retries are played as Slack plays them (the same envelope, a retry header,
until one is taken): afterwards every acknowledged message is in the store once, and every
question, asked before, during and after the outage, is answered exactly once.
"""

from __future__ import annotations

import contextlib
import copy
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import PostgresChannelStore

from tests.support.postgres_server import PostgresServer, postgres_server
from tests.support.redis_server import redis_server
from tests.support.replica_processes import (
    answered,
    parts_posted,
    readiness,
    wait_for,
)
from tests.support.replica_store import (
    api_keys,
    deliver_until_taken,
    not_ready_because,
    start_replicas,
    store_replica,
)
from tests.support.slack_events import CHANNEL, STATE, TEAM, envelope, mention_pair, message, ts

pytestmark = pytest.mark.slow

MESSAGES = 60
QUESTIONS = {10: "what changed in the last hour?", 30: "who is on call?", 50: "status?"}


def stream() -> list[tuple[list[dict[str, Any]], str | None]]:
    """The channel's events: messages, and three mentions (each its message and app_mention)."""
    steps: list[tuple[list[dict[str, Any]], str | None]] = []
    for n in range(MESSAGES):
        at = ts(n)
        if n in QUESTIONS:
            steps.append((mention_pair(at, QUESTIONS[n]), f"{CHANNEL}:{at}"))
        else:
            text = f"deploy note {n}: shard {n % 7} healthy"
            steps.append(([envelope(message(at, text, user="U2"))], None))
    return steps


@pytest.fixture
def database() -> Iterator[PostgresServer]:
    """A cluster of the test's own (the test stops it), where the unprivileged server user
    may enter."""
    workdir = Path(tempfile.mkdtemp(prefix="chanctx-pg-"))
    try:
        server = postgres_server(workdir)
        yield server
        with contextlib.suppress(RuntimeError):  # stopped already
            server.stop("immediate")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def test_postgres_down_and_back_mid_stream(tmp_path: Path, database: PostgresServer) -> None:
    url = database.url
    keys = api_keys(tmp_path)
    refused: list[int | None] = []
    with (
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
        redis_server(tmp_path / "redis") as server,
    ):
        bots = [
            store_replica(tmp_path / name, slack.url, claude.url, server.url, keys, url)
            for name in ("a", "b")
        ]
        sent = threading.Event()
        halfway = threading.Event()
        failures: list[BaseException] = []

        def deliver() -> None:
            try:
                for n, (envelopes, _) in enumerate(stream()):
                    if n == MESSAGES // 3:
                        halfway.set()
                    for env in envelopes:
                        slack.mirror_event(env["event"])
                        deliver_until_taken(bots[n % 2].url, env, timeout=240, refused=refused)
                    time.sleep(0.05)
            except BaseException as error:  # reported on the test's thread
                failures.append(error)
            finally:
                sent.set()

        try:
            start_replicas(bots)
            sender = threading.Thread(target=deliver)
            sender.start()
            assert halfway.wait(120)
            database.stop("fast")
            for bot in bots:
                wait_for(
                    lambda b=bot: "database is unavailable" in not_ready_because(b),
                    30,
                    "/readyz 503 saying the database is down",
                )
            # Events keep coming, and are refused, while the database stays down.
            wait_for(lambda: len(refused) >= 3, 120, "deliveries refused during the outage")
            database.start()
            for bot in bots:
                wait_for(lambda b=bot: readiness(b) == 200, 60, "ready again, no restart")
            sender.join(timeout=300)
            assert sent.is_set() and not failures, failures
            asked = [turn for _, turn in stream() if turn is not None]
            wait_for(lambda: set(asked) <= answered(slack, CHANNEL), 120, "every question answered")
            time.sleep(1.0)  # would a duplicate still arrive?
        finally:
            for bot in bots:
                bot.stop()
    store = PostgresChannelStore(url)
    try:
        stored = [store.get(TEAM, CHANNEL, ts(n)) for n in range(MESSAGES)]
        total = store.stats().messages
    finally:
        store.close()
    assert all(m is not None for m in stored)  # every acknowledged message is there
    assert total >= MESSAGES  # (and the answers the bot posted, if the fake echoed them)
    posted = parts_posted(slack, CHANNEL)
    assert {turn for turn, _ in posted} == set(asked)
    assert max(posted.values()) == 1, posted  # no answer twice
    assert refused, "the outage refused nothing: the test did not test it"
    print(f"PostgreSQL outage: {len(refused)} deliveries refused, then retried and taken")
