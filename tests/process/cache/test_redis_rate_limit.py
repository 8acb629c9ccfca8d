"""The shared Slack budget: replicas on one real redis-server spend one workspace allowance.

The in-memory RateLimiter is the reference: fed the same calls at the same times, the Redis one
must decide exactly the same, whichever replica asks.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from chanctx.cache import FakeClock, RateLimited, RateLimiter, RedisRateLimiter
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import redis_server as shared
from tests.support.redis_server import RedisServer

server, client = shared.server, shared.client  # the module's redis-server and a client of it

REPLIES = "conversations.replies"


calls = st.lists(
    st.tuples(
        st.integers(0, 2),  # which replica asks
        st.sampled_from([REPLIES, "conversations.history", "users.info"]),
        st.integers(0, 40).map(lambda quarter: quarter / 4),  # seconds since the last call
        st.booleans(),  # try_acquire, or wait_time
    ),
    max_size=120,
)


@settings(max_examples=60)
@given(calls)
def test_replicas_decide_exactly_as_one_local_limiter(
    server: RedisServer, sequence: list[tuple[int, str, float, bool]]
) -> None:
    connection = redis.Redis.from_url(server.url)
    connection.flushdb()
    clock = FakeClock(1_000.0)
    reference = RateLimiter(calls_per_minute=40, clock=clock)
    replicas = [RedisRateLimiter(connection, "T1", clock=clock) for _ in range(3)]
    try:
        for replica, method, advance, take in sequence:
            clock.advance(advance)
            if take:
                assert replicas[replica].try_acquire(method) == reference.try_acquire(method)
            else:
                assert replicas[replica].wait_time(method) == pytest.approx(
                    reference.wait_time(method), abs=1e-6
                )
    finally:
        connection.close()


def test_two_replicas_never_spend_twice_the_allowance(client: redis.Redis) -> None:
    clock = FakeClock(0.0)
    a, b = (RedisRateLimiter(client, "T1", clock=clock) for _ in range(2))
    granted = sum(limiter.try_acquire("users.info") for _ in range(50) for limiter in (a, b))
    assert granted == 40 == a.capacity  # one burst for the workspace, not one per replica
    assert a.try_acquire(REPLIES) is False  # the workspace bucket is empty for every method
    clock.advance(1.5)  # 40 calls a minute refill one every 1.5 s
    assert b.try_acquire("users.info") is True and a.try_acquire("users.info") is False


def test_the_replies_budget_is_one_a_minute_across_replicas(client: redis.Redis) -> None:
    clock = FakeClock(0.0)
    a, b = (RedisRateLimiter(client, "T1", clock=clock) for _ in range(2))
    assert a.try_acquire(REPLIES) is True
    assert b.try_acquire(REPLIES) is False
    assert b.wait_time(REPLIES) == pytest.approx(60.0)
    clock.advance(60)
    assert b.try_acquire(REPLIES) is True


def test_acquire_queues_behind_the_other_replica_and_max_wait_takes_nothing(
    client: redis.Redis,
) -> None:
    clock = FakeClock(0.0)
    a, b = (RedisRateLimiter(client, "T1", clock=clock) for _ in range(2))
    slept: list[float] = []
    a.acquire(REPLIES, sleep=slept.append)
    b.acquire(REPLIES, sleep=slept.append)  # reserved the next slot, 60 s on
    with pytest.raises(RateLimited) as caught:
        a.acquire(REPLIES, sleep=slept.append, max_wait=30)
    assert caught.value.retry_after == pytest.approx(120.0)
    assert slept == [60.0]
    assert a.wait_time(REPLIES) == pytest.approx(120.0)  # the refused call reserved nothing


def test_a_429_on_one_replica_pauses_every_replica(client: redis.Redis) -> None:
    clock = FakeClock(0.0)
    a, b = (RedisRateLimiter(client, "T1", clock=clock) for _ in range(2))
    a.penalize("users.info", 30)
    assert b.wait_time("users.info") == pytest.approx(30.0)
    assert b.try_acquire("conversations.history") is True  # only that method
    b.penalize("x", 10, all_methods=True)
    assert a.wait_time("conversations.history") == pytest.approx(10.0)
    a.penalize("users.info", 5)  # a shorter penalty never shortens a longer one
    assert b.wait_time("users.info") == pytest.approx(30.0)
    with pytest.raises(ValueError, match="retry_after"):
        a.penalize("users.info", float("nan"))


def test_workspaces_have_separate_budgets_and_keys_expire(client: redis.Redis) -> None:
    clock = FakeClock(0.0)
    one, two = (
        RedisRateLimiter(client, "T1", clock=clock),
        RedisRateLimiter(client, "T2", clock=clock),
    )
    assert one.try_acquire(REPLIES) and two.try_acquire(REPLIES)
    keys = sorted(k.decode() for k in client.keys("*"))
    assert keys == [
        "chanctx:T1:ratelimit:bucket:*",
        f"chanctx:T1:ratelimit:bucket:{REPLIES}",
        "chanctx:T2:ratelimit:bucket:*",
        f"chanctx:T2:ratelimit:bucket:{REPLIES}",
    ]
    assert all(0 < client.pttl(k) <= 62_000 for k in keys)  # gone once the bucket is full


def test_redis_time_is_the_shared_clock(client: redis.Redis) -> None:
    a, b = RedisRateLimiter(client, "T1"), RedisRateLimiter(client, "T1")
    granted = sum(limiter.try_acquire("users.info") for _ in range(30) for limiter in (a, b))
    assert granted == 40


def test_bad_construction_is_refused(client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="workspace id"):
        RedisRateLimiter(client, "")
    with pytest.raises(ValueError, match="calls_per_minute"):
        RedisRateLimiter(client, "T1", calls_per_minute=0)


def test_an_unreachable_redis_is_an_error_not_a_grant(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)
    limiter = RedisRateLimiter(redis.Redis.from_url(server.url), "T1")  # nothing listens there
    with pytest.raises(redis.ConnectionError):
        limiter.try_acquire("users.info")


def test_run_with_a_redis_url_spends_the_shared_budget(
    client: redis.Redis, server: RedisServer, tmp_path: Path
) -> None:
    """`chanctx run --redis-url`: the bot's Slack reads take from the workspace's Redis budget."""
    from chanctx.bot.launch.one_workspace import build_runtime
    from chanctx.bot.launch.options import Options
    from chanctx.bot.launch.settings import RunSettings
    from chanctx.bot.replay.fake_slack import FakeSlackAPI
    from slack_sdk import WebClient

    state = {
        "auth": {"user_id": "UBOT", "bot_id": "BBOT", "team_id": "T9"},
        "users": {"U1": {"id": "U1", "name": "ana", "profile": {"display_name": "Ana"}}},
    }
    with FakeSlackAPI(state) as fake:
        settings = RunSettings(
            mode="http",
            bot_token="xoxb-test",
            signing_secret="s",
            options=Options(http=True, claude=False, redis_url=server.url, data_dir=tmp_path),
        )
        runtime = build_runtime(WebClient(token="xoxb-test", base_url=fake.url), settings)
        try:
            assert runtime.engine.slack is not None
            assert runtime.engine.slack.user_name("U1") == "Ana"
            assert client.exists("chanctx:T9:ratelimit:bucket:*") == 1
        finally:
            runtime.close_stores()
            runtime.runner.close()


def test_run_with_an_unreachable_redis_stops_with_one_line(tmp_path: Path) -> None:
    from chanctx.bot.launch.one_workspace import build_runtime
    from chanctx.bot.launch.options import Options, SettingsError
    from chanctx.bot.launch.settings import RunSettings
    from chanctx.bot.replay.fake_slack import FakeSlackAPI
    from slack_sdk import WebClient

    dead = RedisServer(tmp_path)  # a free port nothing listens on
    with FakeSlackAPI({"auth": {"user_id": "UBOT", "team_id": "T9"}}) as fake:
        settings = RunSettings(
            mode="http",
            bot_token="xoxb-test",
            signing_secret="s",
            options=Options(http=True, claude=False, redis_url=dead.url, data_dir=tmp_path),
        )
        with pytest.raises(SettingsError, match="--redis-url: cannot reach Redis"):
            build_runtime(WebClient(token="xoxb-test", base_url=fake.url), settings)
