"""A mention asked of a running ``chanctx run --http`` as Slack would deliver it, and its answer
awaited: what several process tests do once the bot is up."""

from __future__ import annotations

import json
import time

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, CHANNEL, mention_pair


def ask_by_mention(
    bot: BotProcess,
    slack: FakeSlackAPI,
    claude: FakeAnthropicAPI,
    at: str,
    question: str,
    *,
    thread_ts: str | None = None,
    timeout: float = 120,
) -> str:
    """Slack holds the message, the message and its ``app_mention`` are posted signed (both
    acknowledged), then the bot's answer is awaited in the channel; the requests sent to Claude
    for it, as JSON."""
    pair = mention_pair(at, question, **({"thread_ts": thread_ts} if thread_ts else {}))
    slack.mirror_event(pair[0]["event"])
    asked = claude.count
    for envelope in pair:
        assert post_signed(bot.url, envelope) == 200
    deadline = time.monotonic() + timeout
    while not [m for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER]:
        assert time.monotonic() < deadline, bot.log_tail()
        time.sleep(0.1)
    return json.dumps([r.body for r in claude.requests[asked:]])
