"""kill -9 of a real `chanctx run --http` in the middle of a streamed answer: after the restart
the started stream is finished or replaced, and the user has exactly one complete answer.

The fakes hold one stream call (slow_next) so the kill lands while the bot waits on it; Slack,
as it would, still carries the held call out after the bot died.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, mention_pair, message, ts

ANCHOR = ts(60)


def state() -> dict[str, Any]:
    seeded = copy.deepcopy(STATE)
    history = []
    for n in range(1, 6):
        item = message(
            ts(n),
            f"Deploy {n} of the checkout service changed the payment retry policy and the "
            f"rollback took {n} minutes because the database migration was reverted by hand",
        )
        item.pop("channel")
        history.append(item)
    seeded["history"] = {CHANNEL: history}
    return seeded


def wait_for(check: Any, what: str, bot: BotProcess, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}; log: {bot.log_tail()}")  # pragma: no cover


def answers(slack: FakeSlackAPI) -> list[dict[str, Any]]:
    return [
        m
        for m in slack.messages(CHANNEL)
        if m.get("user") == BOT_USER and m.get("thread_ts") == ANCHOR
    ]


def journal_ops(data_dir: Path) -> list[str]:
    lines = (data_dir / "turns.jsonl").read_text().splitlines()
    return [json.loads(line)["op"] for line in lines if line.strip()]


def reply_of(data_dir: Path) -> str:
    lines = (data_dir / "turns.jsonl").read_text().splitlines()
    (parts,) = [json.loads(x)["parts"] for x in lines if json.loads(x)["op"] == "reply"]
    assert len(parts) == 1
    return str(parts[0])


@pytest.mark.parametrize(
    ("held", "stream_ttl", "after_kill"),
    [
        ("chat.appendStream", 300.0, "still streaming"),  # stopped, then replaced
        ("chat.appendStream", 1.0, "expired"),  # Slack ended it: replaced
        ("chat.startStream", 300.0, "never journaled"),  # found in the thread, replaced
    ],
)
def test_a_stream_cut_by_kill_9_is_finished_after_the_restart_never_answered_twice(
    tmp_path: Path, held: str, stream_ttl: float, after_kill: str
) -> None:
    data_dir = tmp_path / "data"
    with (
        FakeSlackAPI(state(), stream_ttl=stream_ttl) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bot = BotProcess(data_dir, slack.url, claude.url)
        bot.start()
        try:
            pair = mention_pair(ANCHOR, "what changed in the checkout deploys and the rollbacks?")
            slack.mirror_event(pair[0]["event"])
            slack.slow_next(held, 1, seconds=1.5)
            for envelope in pair:
                assert post_signed(bot.url, envelope) == 200
            wait_for(lambda: held in slack.call_counts(), f"a {held} call", bot)
            bot.kill()
            if after_kill == "expired":  # the held append comes too late for Slack
                wait_for(lambda: not slack.streaming(), "Slack to end the stream", bot)
            else:  # the held call lands after the bot died, as a real one would
                wait_for(lambda: held in [c["method"] for c in slack.sent], "the held call", bot)
                assert slack.streaming()
            assert answers(slack) and "metadata" not in answers(slack)[0]  # cut mid-stream
            ops = journal_ops(data_dir)
            assert ("streaming" in ops) == (after_kill != "never journaled")
            before = len(slack.sent)
            bot.start()
            wait_for(lambda: journal_ops(data_dir)[-1] == "done", "the recovered turn", bot)
            time.sleep(0.5)  # would a second answer still arrive?
        finally:
            bot.stop()
        (answer,) = answers(slack)  # one message: the stream, made whole
        assert answer["text"] == reply_of(data_dir)
        assert answer["metadata"]["event_payload"]["part"] == 0
        assert slack.streaming() == []
        after = [c["method"] for c in slack.sent[before:]]
        assert after[-1] == "chat.update" and "chat.startStream" not in after
        assert "chat.postMessage" not in after
