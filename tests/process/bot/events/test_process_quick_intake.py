"""kill -9 in the middle of a burst loses no acknowledged event: a real `chanctx run --http`
takes signed channel messages and reactions from 8 keep-alive senders on the quick path
(bot/events/quick_intake.py, batched commits); the process is killed while they are still
sending, and every event it answered 200 is in the store afterwards."""

from __future__ import annotations

import copy
import http.client
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import SqliteChannelStore
from slack_sdk.signature import SignatureVerifier

from bench._process import SECRET, BotProcess
from tests.support.slack_events import CHANNEL, STATE, TEAM, envelope, message, ts

SENDERS = 8
PER_SENDER = 400


def send(port: int, envelopes: list[dict[str, Any]], acked: list[dict[str, Any]]) -> None:
    """Deliver in order on one keep-alive connection until the server goes away."""
    verifier = SignatureVerifier(SECRET)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        for sent in envelopes:
            body = json.dumps(sent)
            stamp = str(int(time.time()))
            signature = str(verifier.generate_signature(timestamp=stamp, body=body))
            headers = {
                "Content-Type": "application/json",
                "X-Slack-Request-Timestamp": stamp,
                "X-Slack-Signature": signature,
            }
            connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
            answer = connection.getresponse()
            answer.read()
            if answer.status == 200:
                acked.append(sent)
    except (OSError, http.client.HTTPException):
        return  # killed: what it answered before is what counts
    finally:
        connection.close()


@pytest.mark.slow
def test_kill_9_during_a_burst_loses_no_acknowledged_event(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    bursts = [
        [envelope(message(ts(s * 1_000 + n), f"sender {s} line {n}")) for n in range(PER_SENDER)]
        for s in range(SENDERS)
    ]
    for s, burst in enumerate(bursts):  # a reaction on every tenth message
        for n in range(0, PER_SENDER, 10):
            target = ts(s * 1_000 + n)
            item = {"type": "message", "channel": CHANNEL, "ts": target}
            burst.insert(
                n + n // 10 + 1,
                envelope({"type": "reaction_added", "user": "U2", "reaction": "eyes",
                          "item": item, "event_ts": target}),
            )  # fmt: skip
    acked: list[dict[str, Any]] = []
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url)
        bot.start()
        threads = [threading.Thread(target=send, args=(bot.port, burst, acked)) for burst in bursts]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 120
        while len(acked) < SENDERS * PER_SENDER // 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        bot.kill()  # SIGKILL, senders still sending
        for thread in threads:
            thread.join()
    total = sum(len(burst) for burst in bursts)
    assert 0 < len(acked) < total, "the kill should land mid-burst"
    reader = SqliteChannelStore(data, read_only=True)
    try:
        for sent in acked:
            event = sent["event"]
            if event["type"] == "message":
                stored = reader.get(TEAM, CHANNEL, event["ts"])
                assert stored is not None and stored.text == event["text"]
            else:
                target = reader.get(TEAM, CHANNEL, event["item"]["ts"])
                assert target is not None
                assert [(r.name, r.users) for r in target.reactions] == [("eyes", ("U2",))]
    finally:
        reader.close()
