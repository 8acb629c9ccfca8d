"""The backfill and the warm-up in a real `chanctx run --http` process against the fake Slack
under the limited tier (1 call a minute of 15 messages per history method, 429 with
Retry-After beyond). A minute of real time per call would make these tests hours long, so the
fake's minute and the bot's (``--slack-minute-seconds``, a test-only knob) are shortened to the
same few seconds: the rules (one call a minute, pages of 15) are Slack's, only the clock runs
faster.

* a mention during a backfill is answered while the backfill still runs;
* kill -9 in the middle of a backfill, then a restart: it goes on from the stored cursor, and
  the store ends up holding exactly the channel Slack holds (nothing missing, nothing twice);
* the warm-up of a channel the store has never seen does not hold an answer past --max-wait:
  the answer comes before the channel's ``conversations.history`` (a minute away), which then
  fills the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import BackfillCursor, SqliteChannelStore

from bench._process import BotProcess, post_signed
from tests.support.backfill_channel import backfill_state, missing_from_store
from tests.support.slack_events import BOT_USER, CHANNEL, TEAM, envelope, mention_pair, message

pytestmark = pytest.mark.slow
OTHER = "C0RANDOM01"
HISTORY = "conversations.history"


def limited_bot(
    data: Path, slack: FakeSlackAPI, claude: FakeAnthropicAPI, *args: str
) -> BotProcess:
    return BotProcess(
        data,
        slack.url,
        claude.url,
        extra_args=("--slack-tier", "limited", *args),
        env={"CHANCTX_LOG_LEVEL": "info"},
    )


def cursor_of(data: Path, channel: str = CHANNEL) -> BackfillCursor | None:
    reader = SqliteChannelStore(data, read_only=True)  # beside the running bot
    try:
        return reader.cursor(TEAM, channel, "history")
    finally:
        reader.close()


def wait_for(check: Callable[[], bool], bot: BotProcess, *, limit: float = 120.0) -> None:
    deadline = time.monotonic() + limit
    while not check():
        assert time.monotonic() < deadline, bot.log_tail()
        time.sleep(0.1)


def answers(slack: FakeSlackAPI, channel: str) -> list[dict[str, Any]]:
    return [m for m in slack.messages(channel) if m.get("user") == BOT_USER]


def mention(bot: BotProcess, slack: FakeSlackAPI, text: str, channel: str = CHANNEL) -> None:
    at = f"{time.time():.6f}"
    pair = mention_pair(at, text, channel=channel)
    slack.mirror_event(pair[0]["event"])
    for sent in pair:
        assert post_signed(bot.url, sent) == 200


def make_known(bot: BotProcess, slack: FakeSlackAPI, channel: str = CHANNEL) -> None:
    """A live message: the bot is in the channel, and now its store knows it."""
    event = message(f"{time.time():.6f}", "morning all", channel=channel)
    slack.mirror_event(event)
    assert post_signed(bot.url, envelope(event)) == 200


def served(slack: FakeSlackAPI, method: str) -> int:
    refused = sum(1 for f in slack.failures if f[0] == method and f[1] == 429)
    return slack.call_counts().get(method, 0) - refused


def test_a_mention_during_a_backfill_is_answered_while_it_runs(tmp_path: Path) -> None:
    data = tmp_path / "data"
    state = backfill_state(300, threads=3, replies=4)
    with (
        FakeSlackAPI(state, tier="limited", minute_seconds=1.0) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bot = limited_bot(
            data, slack, claude, "--slack-minute-seconds", "1", "--backfill", "all",
            "--max-wait", "2",
        )  # fmt: skip
        bot.start(timeout=300)
        try:
            make_known(bot, slack)
            wait_for(lambda: (c := cursor_of(data)) is not None and c.oldest_ts is not None, bot)
            mention(bot, slack, "what was the queue depth this morning?")
            wait_for(lambda: bool(answers(slack, CHANNEL)), bot)
            during = cursor_of(data)
            assert during is not None and not during.complete, "the backfill ended first"
            wait_for(lambda: (c := cursor_of(data)) is not None and c.complete, bot, limit=300)
        finally:
            bot.stop()
        store = SqliteChannelStore(data, read_only=True)
        try:
            missing, extra = missing_from_store(store, state)
        finally:
            store.close()
    assert missing == set()
    # Beyond the channel Slack held: only the live message and the mention the test sent.
    assert len(extra) == 2


def test_kill_9_mid_backfill_then_a_restart_resumes_from_the_cursor(tmp_path: Path) -> None:
    data = tmp_path / "data"
    state = backfill_state(300, threads=3, replies=4)
    pages = -(-301 // 15)  # the channel and the live message, in pages of 15
    with (
        FakeSlackAPI(state, tier="limited", minute_seconds=1.0) as slack,
        FakeAnthropicAPI() as claude,
    ):
        args = ("--slack-minute-seconds", "1", "--backfill", "all")
        bot = limited_bot(data, slack, claude, *args)
        bot.start(timeout=300)
        try:
            make_known(bot, slack)
            newest = float(state["history"][CHANNEL][-1]["ts"])

            def some_pages_stored() -> bool:
                cursor = cursor_of(data)
                return cursor is not None and float(cursor.oldest_ts or newest) < newest - 60 * 60

            wait_for(some_pages_stored, bot)
            bot.kill()
            before = cursor_of(data)
            assert before is not None and not before.complete
            calls_at_kill = served(slack, HISTORY)
            bot.start(timeout=300)
            wait_for(lambda: (c := cursor_of(data)) is not None and c.complete, bot, limit=300)
        finally:
            bot.stop()
        store = SqliteChannelStore(data, read_only=True)
        try:
            missing, extra = missing_from_store(store, state)
            stored = store.messages(TEAM, CHANNEL)
        finally:
            store.close()
        total = served(slack, HISTORY)
    assert missing == set()
    assert len(extra) == 1  # the live message
    assert len(stored) == len({m.ts for m in stored}) == 300 + 3 * 4 + 1
    # The restart asked Slack for the pages after the cursor, and at most the one in flight
    # at the kill again; never the channel from its newest page.
    assert calls_at_kill < pages
    assert total <= pages + 1


def test_the_warm_up_of_an_unknown_channel_never_holds_an_answer_past_max_wait(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    state = backfill_state(40)
    state["history"][OTHER] = backfill_state(40, channel=OTHER)["history"][OTHER]
    with (
        FakeSlackAPI(state, tier="limited", minute_seconds=20.0) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bot = limited_bot(
            data, slack, claude, "--slack-minute-seconds", "20", "--backfill", "off",
            "--max-wait", "1",
        )  # fmt: skip
        bot.start(timeout=300)
        try:
            mention(bot, slack, "anything new here?")  # takes this minute's history call
            wait_for(lambda: bool(answers(slack, CHANNEL)), bot)
            mention(bot, slack, "and in here?", channel=OTHER)
            wait_for(lambda: bool(answers(slack, OTHER)), bot)
            other_reads = [
                c for c in slack.calls if c.method == HISTORY and c.params.get("channel") == OTHER
            ]
            # Answered before its channel's history call went out (it was a minute away).
            assert other_reads == [], ([(c.method, c.params) for c in slack.calls], bot.log_tail())
            # The load went on in the background and filled the store.
            wait_for(lambda: cursor_of(data, OTHER) is not None, bot)
        finally:
            bot.stop()
        store = SqliteChannelStore(data, read_only=True)
        try:
            held = store.messages(TEAM, OTHER)
        finally:
            store.close()
    assert len(held) >= 15  # the one page of 15 the limited tier gives, and the mention
