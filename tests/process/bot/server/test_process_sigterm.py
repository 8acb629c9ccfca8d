"""SIGTERM with an answer in flight: the process exits within 10 s, and the next start answers
the question, once."""

from __future__ import annotations

import copy
import signal
import time
from pathlib import Path

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, mention_pair, ts


def replies(slack: FakeSlackAPI, anchor: str) -> int:
    return sum(
        1
        for m in slack.messages(CHANNEL)
        if m.get("user") == BOT_USER and m.get("thread_ts") == anchor
    )


def test_sigterm_exits_in_time_and_the_next_start_answers(tmp_path: Path) -> None:
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI(latency_ms=4_000) as claude:
        bot = BotProcess(tmp_path / "data", slack.url, claude.url)
        bot.start()
        pair = mention_pair(ts(10), "what broke?")
        slack.mirror_event(pair[0]["event"])
        assert all(post_signed(bot.url, e) == 200 for e in pair)  # acknowledged
        time.sleep(0.5)  # the answer is now waiting on Claude
        assert bot.process is not None
        stopping = time.monotonic()
        bot.process.send_signal(signal.SIGTERM)
        code = bot.process.wait(timeout=15)
        took = time.monotonic() - stopping
        bot.process = None
        assert took < 10, f"exit took {took:.1f} s"
        assert code == 0 and replies(slack, ts(10)) == 0
        bot.start()  # the next start finds the question in the journal
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and replies(slack, ts(10)) == 0:
            time.sleep(0.2)
        time.sleep(1.0)
        bot.stop()
        assert replies(slack, ts(10)) == 1
