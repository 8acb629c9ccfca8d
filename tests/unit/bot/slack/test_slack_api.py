"""SlackFetcher: the real WebClient over loopback to FakeSlackAPI, behind the rate limiter."""

from __future__ import annotations

import itertools
import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.slack.slack_api import SlackFetcher
from chanctx.bot.slack.web_calls import SlackUnavailable
from chanctx.cache import FakeClock, RateLimited, RateLimiter, ThreadReplyCache
from chanctx.context import ChanctxError
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient

from tests.support.fake_clock import ticking_clock

TOKEN = "xoxb-fetcher-test-secret"
BASE = 1_760_000_000
ME = SelfIdentity(user_id="UBOT", bot_id="BBOT")
REPLIES = "conversations.replies"
HISTORY = "conversations.history"
_channels = (f"CF{n:06d}" for n in itertools.count())

STATE: dict[str, Any] = {
    "auth": {"user_id": "UBOT", "bot_id": "BBOT", "team_id": "T1"},
    "channels": {"C1": {"id": "C1", "name": "incidents"}, "D1": {"id": "D1", "is_im": True}},
    "users": {
        "U1": {"id": "U1", "name": "alice", "profile": {"display_name": "Alice"}},
        "U2": {"id": "U2", "name": "bob", "real_name": "Bob M", "profile": {"display_name": ""}},
        "U3": {"id": "U3", "name": "cara", "profile": {}},
    },
}


class Sleeper:
    """A fake ``sleep`` that records each wait and advances the fake clock instead."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.clock.advance(seconds)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSlackAPI]:
    with FakeSlackAPI(STATE, clock=ticking_clock(float(BASE + 10**6))) as server:
        yield server


@pytest.fixture(scope="module")
def client(fake: FakeSlackAPI) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.url)


def make_fetcher(
    client: WebClient, *, per_method: dict[str, float] | None = None, **options: Any
) -> tuple[SlackFetcher, Sleeper]:
    clock = FakeClock(1000.0)
    sleep = Sleeper(clock)
    limiter = RateLimiter(per_method=per_method, clock=clock)
    fetcher = SlackFetcher(client, limiter=limiter, me=ME, sleep=sleep, clock=clock, **options)
    return fetcher, sleep


def ts(seconds: int) -> str:
    return f"{BASE + seconds}.000000"


def seed_thread(fake: FakeSlackAPI, replies: int, *, root_user: str = "U1") -> tuple[str, str]:
    """A new channel holding one thread with ``replies`` replies; returns (channel, root ts)."""
    channel = next(_channels)
    root = ts(0)
    fake.add_message(channel, {"type": "message", "user": root_user, "text": "root", "ts": root})
    for i in range(replies):
        user = "UBOT" if i % 3 == 2 else "U2"
        reply = {"type": "message", "user": user, "text": f"r{i}", "ts": ts(i + 1)}
        fake.add_message(channel, {**reply, "thread_ts": root})
    return channel, root


def test_fetch_thread_follows_cursors_root_first(fake: FakeSlackAPI, client: WebClient) -> None:
    channel, root = seed_thread(fake, 40)
    fetcher, sleep = make_fetcher(client)
    thread = fetcher.fetch_thread(channel, root)
    assert [m.ts for m in thread] == [root] + [ts(i + 1) for i in range(40)]
    assert thread[0].reply_count == 40 and thread[0].text == "root"
    assert thread[3].is_self and not thread[1].is_self  # our replies are the assistant's
    assert fetcher.api_calls == {REPLIES: 3}  # 41 messages, 15 a page
    assert sleep.waits == [pytest.approx(60), pytest.approx(60)]  # 1/min for replies, queued


@settings(max_examples=25, deadline=None)
@given(replies=st.integers(0, 70), page_size=st.integers(1, 30))
def test_fetch_thread_gets_every_message_once(
    fake: FakeSlackAPI, client: WebClient, replies: int, page_size: int
) -> None:
    channel, root = seed_thread(fake, replies)
    fetcher, _ = make_fetcher(client, page_size=page_size, max_pages=100, per_method={})
    thread = fetcher.fetch_thread(channel, root)
    assert [m.ts for m in thread] == [root] + [ts(i + 1) for i in range(replies)]
    assert fetcher.api_calls[REPLIES] == max(1, -(-(replies + 1) // page_size))


def test_page_cap_returns_what_was_fetched(
    fake: FakeSlackAPI, client: WebClient, caplog: pytest.LogCaptureFixture
) -> None:
    channel, root = seed_thread(fake, 100)
    fetcher, _ = make_fetcher(client, page_size=15, max_pages=3)
    with caplog.at_level(logging.WARNING, logger="chanctx.slack_api"):
        thread = fetcher.fetch_thread(channel, root)
    assert len(thread) == 45
    assert thread[0].ts == root
    assert fetcher.api_calls == {REPLIES: 3}
    assert "cut at 3 pages" in caplog.text and root in caplog.text


def test_missing_threads_and_channels_are_empty(fake: FakeSlackAPI, client: WebClient) -> None:
    fetcher, _ = make_fetcher(client, per_method={})
    assert fetcher.fetch_thread("C1", "1.000001") == []
    assert fetcher.fetch_thread("C404", "1.000001") == []
    assert fetcher.channel_history("C404") == []
    assert fetcher.fetch_message("C404", "1.000001") is None


def test_fetch_message_prefers_history_for_top_level_messages(
    fake: FakeSlackAPI, client: WebClient
) -> None:
    channel, root = seed_thread(fake, 2)
    fetcher, _ = make_fetcher(client)
    found = fetcher.fetch_message(channel, root)
    assert found is not None and found.text == "root"
    assert fetcher.api_calls == {HISTORY: 1}  # the 1/min replies budget is untouched
    reply = fetcher.fetch_message(channel, ts(2))
    assert reply is not None and reply.text == "r1" and reply.thread_ts == root
    assert fetcher.fetch_message(channel, ts(999)) is None


def test_channel_history_is_oldest_first_and_bounded(fake: FakeSlackAPI, client: WebClient) -> None:
    channel, root = seed_thread(fake, 3)
    for i in range(450):
        fake.add_message(
            channel, {"type": "message", "user": "U1", "text": f"m{i}", "ts": ts(100 + i)}
        )
    fetcher, _ = make_fetcher(client)
    latest = fetcher.channel_history(channel, limit=300)
    assert [m.ts for m in latest] == [ts(100 + i) for i in range(150, 450)]
    assert fetcher.api_calls == {HISTORY: 2}  # 200 + 100
    everything = fetcher.channel_history(channel, limit=10_000)
    assert len(everything) == 451 and everything[0].ts == root  # replies stay out


def test_names_are_cached(fake: FakeSlackAPI, client: WebClient) -> None:
    fetcher, _ = make_fetcher(client)
    assert fetcher.user_name("U1") == fetcher.user_name("U1") == "Alice"
    assert fetcher.user_name("U2") == "Bob M"  # empty display_name falls through
    assert fetcher.user_name("U3") == "cara"
    assert fetcher.channel_name("C1") == fetcher.channel_name("C1") == "incidents"
    assert fetcher.channel_name("D1") == "D1"
    assert fetcher.api_calls == {"users.info": 3, "conversations.info": 2}


def test_unknown_user_is_its_id_and_retried_later(fake: FakeSlackAPI, client: WebClient) -> None:
    fetcher, sleep = make_fetcher(client)
    assert fetcher.user_name("U404") == fetcher.user_name("U404") == "U404"
    assert fetcher.api_calls == {"users.info": 1}  # the failure is remembered briefly...
    sleep(61)
    assert fetcher.user_name("U404") == "U404"
    assert fetcher.api_calls == {"users.info": 2}  # ...not for the hour a name is


def test_429_waits_retry_after_then_succeeds(fake: FakeSlackAPI, client: WebClient) -> None:
    channel, root = seed_thread(fake, 2)
    fetcher, sleep = make_fetcher(client, per_method={})
    fake.fail_next(REPLIES, status=429, retry_after=7)
    assert len(fetcher.fetch_thread(channel, root)) == 3
    assert sleep.waits == [pytest.approx(7)]
    assert fetcher.api_calls == {REPLIES: 2}


def test_429_penalizes_the_limiter(fake: FakeSlackAPI, client: WebClient) -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    fetcher = SlackFetcher(client, limiter=limiter, me=ME, sleep=Sleeper(clock), overflow="degrade")
    fake.fail_next("users.info", status=429, retry_after=30)
    assert fetcher.user_name("U1") == "U1"  # names never raise
    assert limiter.wait_time("users.info") == pytest.approx(30)
    assert limiter.wait_time(HISTORY) == 0.0


def test_queue_gives_up_after_max_retries(fake: FakeSlackAPI, client: WebClient) -> None:
    fetcher, sleep = make_fetcher(client, max_retries=2)
    fake.fail_next(HISTORY, 3, status=429, retry_after=2)
    with pytest.raises(RateLimited) as caught:
        fetcher.channel_history("C1")
    assert caught.value.method == HISTORY and caught.value.retry_after == 2
    assert sleep.waits == [pytest.approx(2), pytest.approx(2)]


def test_500_then_success(fake: FakeSlackAPI, client: WebClient) -> None:
    fetcher, sleep = make_fetcher(client)
    fake.fail_next("users.info", status=500)
    assert fetcher.user_name("U1") == "Alice"
    assert fetcher.api_calls == {"users.info": 2}
    assert len(sleep.waits) == 1  # one short backoff


def test_transient_ok_false_is_retried(fake: FakeSlackAPI, client: WebClient) -> None:
    channel, root = seed_thread(fake, 1)
    fetcher, _ = make_fetcher(client, per_method={})
    fake.fail_next(REPLIES, status=200, error="internal_error")
    assert len(fetcher.fetch_thread(channel, root)) == 2


def test_persistent_500_raises_slack_unavailable(fake: FakeSlackAPI, client: WebClient) -> None:
    fetcher, sleep = make_fetcher(client, max_retries=3)
    fake.fail_next(HISTORY, 4, status=503)  # exactly what it will consume: the fake is shared
    with pytest.raises(SlackUnavailable) as caught:
        fetcher.channel_history("C1")
    assert isinstance(caught.value, ChanctxError)
    assert (
        str(caught.value)
        == "Slack API conversations.history unavailable after 4 attempt(s): HTTP 503"
    )
    assert fetcher.api_calls == {HISTORY: 4}
    assert sleep.waits == sorted(sleep.waits) and len(sleep.waits) == 3  # growing backoff


def test_connection_refused_raises_slack_unavailable() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = WebClient(token=TOKEN, base_url=f"http://127.0.0.1:{port}/api/", retry_handlers=[])
    fetcher, _ = make_fetcher(dead, max_retries=1)
    with pytest.raises(SlackUnavailable, match=r"conversations\.history .* 2 attempt"):
        fetcher.channel_history("C1")


def test_degrade_raises_at_once_queue_waits(fake: FakeSlackAPI, client: WebClient) -> None:
    channel, root = seed_thread(fake, 3)
    degrade, sleep = make_fetcher(client, overflow="degrade")
    assert len(degrade.fetch_thread(channel, root)) == 4
    with pytest.raises(RateLimited) as caught:
        degrade.fetch_thread(channel, root)  # the 1/min replies budget is spent
    assert caught.value.method == REPLIES and caught.value.retry_after == pytest.approx(60)
    assert sleep.waits == [] and degrade.api_calls == {REPLIES: 1}  # nothing sent, no wait

    queue, sleep = make_fetcher(client)
    assert len(queue.fetch_thread(channel, root)) == 4
    assert len(queue.fetch_thread(channel, root)) == 4
    assert sleep.waits == [pytest.approx(60)]


def test_degrade_mid_thread_keeps_the_pages_it_has(
    fake: FakeSlackAPI, client: WebClient, caplog: pytest.LogCaptureFixture
) -> None:
    channel, root = seed_thread(fake, 20)
    fetcher, _ = make_fetcher(client, overflow="degrade")
    with caplog.at_level(logging.WARNING, logger="chanctx.slack_api"):
        thread = fetcher.fetch_thread(channel, root)
    assert len(thread) == 15  # the first page; the second page may not go for a minute
    assert "cut after 1 page" in caplog.text


def test_the_token_is_never_logged(
    fake: FakeSlackAPI, client: WebClient, caplog: pytest.LogCaptureFixture
) -> None:
    channel, root = seed_thread(fake, 20)
    fetcher, _ = make_fetcher(client, per_method={})
    fake.fail_next(REPLIES, status=429, retry_after=1)
    fake.fail_next("users.info", status=500)
    with caplog.at_level(logging.DEBUG):
        fetcher.fetch_thread(channel, root)
        fetcher.user_name("U1")
        fetcher.user_name("U404")
    assert caplog.records  # something was logged...
    assert TOKEN not in caplog.text  # ...but never the token
    assert TOKEN not in repr(fake.calls)


def test_thread_cache_over_the_fetcher_spends_one_call(
    fake: FakeSlackAPI, client: WebClient
) -> None:
    channel, root = seed_thread(fake, 5)
    fetcher, _ = make_fetcher(client)
    threads = ThreadReplyCache(fetcher)
    for _ in range(5):
        assert len(threads.get(channel, root).messages) == 6
    assert fetcher.api_calls == {REPLIES: 1}


def test_bad_options_are_rejected(client: WebClient) -> None:
    limiter = RateLimiter()
    with pytest.raises(ValueError, match="overflow"):
        SlackFetcher(client, limiter=limiter, me=ME, overflow="drop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="page_size"):
        SlackFetcher(client, limiter=limiter, me=ME, page_size=0)
