"""Replicas on one Redis, each with its own channel store (the SQLite file in its data dir):
what the change stream says goes into every replica's store, including what another replica
fetched from Slack. A replica restarted on its data dir, after the stream has lost everything
(trimmed, a new Redis), answers with the whole history and makes no Slack read.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path

import pytest
import redis
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.manifest_store import namespace

from bench._process import post_signed
from tests.support.redis_server import redis_server
from tests.support.replica_processes import replica_status, wait_for, wait_ready
from tests.support.replica_store import api_keys, found, start_replicas, store_replica
from tests.support.slack_events import STATE, TEAM, envelope, message, ts

pytestmark = pytest.mark.slow

MESSAGES = 200
READS = ("conversations.history", "conversations.replies")
EARLY_FACT = "the spare badge for the lab is taped under desk 12 saffron"
LATE_FACT = "the rollback drill moved to thursday at 1500 cobalt"


def test_a_replica_restarted_on_its_data_dir_needs_no_slack(tmp_path: Path) -> None:
    keys = api_keys(tmp_path)
    with (
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
        redis_server(tmp_path / "redis") as server,
    ):
        first, second = bots = [
            store_replica(tmp_path / name, slack.url, claude.url, server.url, keys)
            for name in ("a", "b")
        ]
        try:
            start_replicas(bots)
            for n in range(MESSAGES):
                text = EARLY_FACT if n == 5 else f"shift log {n}: all quiet on rack {n % 9}"
                event = message(ts(n), text, user="U2" if n % 2 else "U1")
                slack.mirror_event(event)
                assert post_signed(bots[n % 2].url, envelope(event)) == 200
            # The first replica loads the channel from Slack; the second learns it from the
            # stream (its own store keeps the page and its cursor).
            assert found(first, "where is the spare badge?", "desk 12"), first.log_tail()
            # The second replica asked only once it has read the whole stream (else it would
            # load the channel from Slack itself, not having seen the first one's load yet).
            stream = namespace(TEAM) + "changes"
            entries = redis.Redis.from_url(server.url).xlen(stream)
            wait_for(lambda: replica_status(second).get("changes_applied", 0) >= entries, 60,
                     "the second replica read the stream")  # fmt: skip
            late = message(ts(MESSAGES + 1), LATE_FACT, user="U2")
            slack.mirror_event(late)
            assert post_signed(first.url, envelope(late)) == 200
            wait_for(lambda: found(second, "when is the rollback drill?", "cobalt"), 30,
                     "the second replica has everything")  # fmt: skip
            reads_before = {m: slack.call_counts().get(m, 0) for m in READS}
            second.stop()
            redis.Redis.from_url(server.url).delete(stream)
            started = time.monotonic()
            second.start(timeout=300)
            wait_ready(second, timeout=120)
            ready_after = time.monotonic() - started
            assert found(second, "where is the spare badge?", "desk 12"), second.log_tail()
            assert found(second, "when is the rollback drill?", "cobalt")
            reads_after = {m: slack.call_counts().get(m, 0) for m in READS}
        finally:
            for bot in bots:
                bot.stop()
    assert reads_before["conversations.history"] == 1  # the first replica's one load
    assert reads_after == reads_before, (reads_before, reads_after)
    print(
        f"own stores: {MESSAGES + 1} messages; restarted replica ready in {ready_after:.1f} s "
        f"with {sum(reads_after.values()) - sum(reads_before.values())} Slack reads"
    )
