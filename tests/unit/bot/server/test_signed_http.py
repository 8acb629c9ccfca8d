"""HTTP mode: signed Slack requests over loopback to the ASGI app are answered once, a bad
signature or a stale timestamp is refused, and the URL check is answered."""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from slack_sdk.signature import SignatureVerifier

from tests.support.slack_events import STATE, mention_pair, ts

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # a made-up signing secret for the test only


@pytest.fixture
def served() -> Iterator[tuple[OfflineBot, BackgroundServer]]:
    with (
        OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET) as bot,
        BackgroundServer(build_asgi_app(bot.app)) as server,
    ):
        yield bot, server


def post(
    url: str,
    body: str,
    *,
    timestamp: int | None = None,
    signature: str | None = None,
    retry: int | None = None,
) -> int:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature
        or SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body),
    }
    if retry is not None:
        headers["X-Slack-Retry-Num"] = str(retry)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_signed_events_are_accepted_and_answered_once(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    bot, server = served
    message, mention = (json.dumps(e) for e in mention_pair(ts(10), "status?"))
    assert post(server.url, message) == 200
    assert post(server.url, mention) == 200
    assert post(server.url, mention, retry=1) == 200  # Slack's retry of a slow ack
    bot.runtime.runner.drain(10)
    assert len(bot.runtime.runner.results) == 1


def test_a_bad_signature_is_rejected(served: tuple[OfflineBot, BackgroundServer]) -> None:
    bot, server = served
    body = json.dumps(mention_pair(ts(10), "status?")[1])
    assert post(server.url, body, signature="v0=" + "0" * 64) == 401
    assert bot.engine.history.get("C0GENERAL1", ts(10)) is None  # nothing recorded


def test_a_stale_timestamp_is_rejected(served: tuple[OfflineBot, BackgroundServer]) -> None:
    bot, server = served
    body = json.dumps(mention_pair(ts(10), "status?")[1])
    assert post(server.url, body, timestamp=int(time.time()) - 10 * 60) == 401
    bot.runtime.runner.drain(10)
    assert not bot.runtime.runner.results


def test_url_verification_challenge(served: tuple[OfflineBot, BackgroundServer]) -> None:
    _, server = served
    body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "x"})
    assert post(server.url, body) == 200
