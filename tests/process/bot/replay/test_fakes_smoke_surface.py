"""`chanctx fakes` as a smoke test meets it: OAuth's code exchange, the limited tier, the
messages a test sent the bot known to Slack, and what the fake was asked (`/_fake/`)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bench._process import free_port
from tests.support.paths import DEMO

CHANNEL = "C0INCIDENT"


@pytest.fixture(scope="module")
def fakes() -> Iterator[str]:
    """The Slack URL of `chanctx fakes fixtures/demo --slack-tier limited`."""
    command = [sys.executable, "-m", "chanctx.bot.cli", "fakes", str(DEMO),
               "--slack-port", str(free_port()), "--anthropic-port", str(free_port()),
               "--slack-tier", "limited"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip().split("=", 1)[1]
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def fake_json(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    root = url.removesuffix("api/")
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(urllib.request.Request(root + path, data=data), timeout=10) as r:
        return json.loads(r.read())


def test_oauth_code_exchange_gives_a_bot_token_that_works(fakes: str) -> None:
    anonymous = WebClient(base_url=fakes)
    installed = anonymous.oauth_v2_access(client_id="1.2", client_secret="s", code="c0de")
    assert installed["token_type"] == "bot" and installed["access_token"].startswith("xoxb-")
    assert installed["team"]["id"] and installed["bot_user_id"]
    bot = WebClient(token=installed["access_token"], base_url=fakes)
    assert bot.auth_test()["user_id"] == installed["bot_user_id"]
    with pytest.raises(SlackApiError) as refused:
        anonymous.oauth_v2_access(client_id="1.2", client_secret="s", code="")
    assert refused.value.response["error"] == "invalid_code"


def test_a_mention_the_test_sent_is_known_and_the_fake_says_what_it_was_asked(
    fakes: str,
) -> None:
    client = WebClient(token="xoxb-smoke", base_url=fakes)
    mention = {"type": "app_mention", "channel": CHANNEL, "user": "U0PRIYA001",
               "text": "<@U0CHANCTX0> what broke?", "ts": "1790000000.000100"}  # fmt: skip
    assert fake_json(fakes, "_fake/events", {"type": "event_callback", "event": mention})["ok"]
    assert client.reactions_add(channel=CHANNEL, timestamp=mention["ts"], name="eyes")["ok"]
    reply = client.chat_postMessage(channel=CHANNEL, thread_ts=mention["ts"], text="the deploy")
    assert client.reactions_add(channel=CHANNEL, timestamp=reply["ts"], name="white_check_mark")
    thread = client.conversations_replies(channel=CHANNEL, ts=mention["ts"])["messages"]
    assert [m["ts"] for m in thread] == [mention["ts"], reply["ts"]]
    counts = fake_json(fakes, "_fake/calls")["calls"]
    assert counts["reactions.add"] == 2 and counts["chat.postMessage"] == 1
    (posted,) = fake_json(fakes, "_fake/messages")["messages"]
    assert posted["channel"] == CHANNEL and posted["text"] == "the deploy"
    assert posted["thread_ts"] == mention["ts"]
    # The limited tier: the replies call above was this minute's.
    with pytest.raises(SlackApiError) as limited:
        client.conversations_replies(channel=CHANNEL, ts=mention["ts"])
    assert limited.value.response.status_code == 429
    assert 0 < int(limited.value.response.headers["Retry-After"]) <= 60
