"""kill -9 at random points while 50 mentions arrive, Slack's retries after each restart, and a
Slack that fails 30% of posts and stream calls: every mention gets exactly one whole reply.

The bot is a real `chanctx run --http` process; Slack's Web API and the Messages API are the
fakes, served from this test over loopback (they outlive the bot, as Slack does).
"""

from __future__ import annotations

import copy
import random
import time
from collections import Counter
from pathlib import Path

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, mention_pair, ts

MENTIONS = 50


def replies_per_mention(slack: FakeSlackAPI, anchors: list[str]) -> Counter[str]:
    wanted = set(anchors)
    return Counter(
        str(m.get("thread_ts"))
        for m in slack.messages(CHANNEL)
        if m.get("user") == BOT_USER and m.get("thread_ts") in wanted
    )


def finished(slack: FakeSlackAPI) -> bool:
    """No stream left open, and every reply of the bot carries its turn in its metadata."""
    replies = [
        m for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER and m.get("thread_ts")
    ]
    return slack.streaming() == [] and all(m.get("metadata") for m in replies)


def test_every_mention_is_answered_exactly_once_through_kills_retries_and_post_errors(
    tmp_path: Path,
) -> None:
    rng = random.Random(11)
    state = copy.deepcopy(STATE)
    state["auth"]["team_id"] = "T0TEST0001"
    with (
        FakeSlackAPI(state, post_error_rate=0.3, seed=5) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bot = BotProcess(tmp_path / "data", slack.url, claude.url)
        bot.start()
        anchors = [ts(60 + 7 * n) for n in range(MENTIONS)]
        pairs = [
            mention_pair(at, f"question {n}: what changed in deploy {n}?")
            for n, at in enumerate(anchors)
        ]
        kills = sorted(rng.sample(range(3, MENTIONS - 3), 4))
        undelivered: list[dict] = []
        try:
            for n, pair in enumerate(pairs):
                slack.mirror_event(pair[0]["event"])  # Slack has the message, whatever we do
                for envelope in pair:
                    if post_signed(bot.url, envelope) != 200:
                        undelivered.append(envelope)  # Slack will retry it
                if n in kills:
                    time.sleep(rng.uniform(0.0, 0.4))  # land before, during or after an answer
                    bot.kill()
                    bot.start()
                    # Slack retries what was not acknowledged, and (late acks) some that were.
                    recent = [e for p in pairs[max(0, n - 2) : n + 1] for e in p]
                    for envelope in undelivered + recent:
                        assert post_signed(bot.url, envelope, retry=1) == 200
                    undelivered = []
            for envelope in undelivered:
                assert post_signed(bot.url, envelope, retry=1) == 200
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                counts = replies_per_mention(slack, anchors)
                # Every mention has its reply, and every reply is finished (a stream still
                # growing on a slow machine is not yet a whole answer).
                if len(counts) == MENTIONS and finished(slack):
                    time.sleep(1.0)  # would a duplicate still arrive?
                    break
                time.sleep(0.2)
            counts = replies_per_mention(slack, anchors)
        finally:
            bot.stop()
        missing = [a for a in anchors if a not in counts]
        doubled = {a: c for a, c in counts.items() if c > 1}
        assert not missing, f"{len(missing)} mentions never answered; log: {bot.log_tail()}"
        assert not doubled, f"answered more than once: {doubled}"
        assert bot.starts == 5  # four kills, four restarts
        # Answers are streamed; 30% of every post, stream call and update failed (500 / 429).
        calls = slack.call_counts()
        assert slack.post_error_rate == 0.3 and calls["chat.startStream"] > MENTIONS
        # Each reply is whole: finished (its turn in the metadata), no stream left open.
        replies = [
            m for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER and m.get("thread_ts")
        ]
        assert all(m.get("metadata") for m in replies) and slack.streaming() == []
