"""Whatever arrives on the events path gets a 2xx or a 4xx, never a 5xx, and breaks nothing.

Raw bodies go over real HTTP to the ASGI app on uvicorn; envelopes go through the real Bolt app.
"""

from __future__ import annotations

import copy
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from chanctx.bot.slack.envelope import parse_json_payload
from chanctx.manifest_store import TurnJournal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_bolt.request import BoltRequest
from slack_sdk.signature import SignatureVerifier

from tests.support.slack_events import CHANNEL, STATE, envelope, mention_pair, ts

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # a made-up signing secret for the test only


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[OfflineBot, BackgroundServer]]:
    with (
        OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET) as bot,
        BackgroundServer(
            build_asgi_app(bot.app, signing_secret=SECRET, max_body=64 * 1024, body_timeout=1.0)
        ) as server,
    ):
        yield bot, server


def post(url: str, body: bytes, *, sign: bool = True, headers: dict[str, str] | None = None) -> int:
    stamp = str(int(time.time()))
    sent = {"Content-Type": "application/json", "X-Slack-Request-Timestamp": stamp}
    if sign:
        signature = SignatureVerifier(SECRET).generate_signature(
            timestamp=stamp, body=body.decode("utf-8", errors="surrogateescape")
        )
        sent["X-Slack-Signature"] = signature
    sent.update(headers or {})
    request = urllib.request.Request(url, data=body, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
raw_bodies = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(str.encode),
    json_values.map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=raw_bodies, sign=st.booleans())
def test_any_body_gets_a_2xx_or_4xx(
    served: tuple[OfflineBot, BackgroundServer], body: bytes, sign: bool
) -> None:
    _, server = served
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        sign = False  # a signature over bytes that are not text cannot be made the usual way
    status = post(server.url, body, sign=sign)
    assert 200 <= status < 500, (status, body[:80])
    if not sign:
        assert status == 401


def field_values() -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), st.integers(), st.lists(st.text(max_size=5), max_size=2),
                     st.text(max_size=12), st.just("not-a-ts"), st.just("1781020800.1234567"),
                     st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2))  # fmt: skip


@st.composite
def malformed_envelopes(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": draw(st.sampled_from(["message", "app_mention", "reaction_added", None, 7])),
        "channel": CHANNEL,
        "user": "U1",
        "text": "<@U0BOT00001> hello",
        "ts": ts(30),
    }
    outer = envelope(event)  # built whole first, then broken
    keys = [*sorted(event), "thread_ts", "subtype", "item", "message", "files", "edited"]
    for key in draw(st.lists(st.sampled_from(keys), max_size=4)):
        event[key] = draw(field_values())
    for key in draw(
        st.lists(st.sampled_from(["type", "event_id", "team_id", "event"]), max_size=2)
    ):
        outer[key] = draw(field_values())
    return outer


@pytest.mark.slow
@settings(max_examples=300)
@given(malformed_envelopes())
def test_malformed_envelopes_are_acknowledged_and_break_nothing(item: dict[str, Any]) -> None:
    with OfflineBot(copy.deepcopy(STATE)) as bot:
        text = json.dumps(item)
        _, reason = parse_json_payload(text)
        if reason is None:  # what Bolt can build a request from goes through the real App
            response = bot.app.dispatch(BoltRequest(body=text, mode="socket_mode"))
            assert response.status < 500, response.body
        bot.runtime.runner.drain(10)
        # The bot still answers a real mention afterwards.
        for good in mention_pair(ts(100), "still there?"):
            bot.dispatch(good)
        assert any(r.turn.anchor_ts == ts(100) for r in bot.runtime.runner.results)


def test_too_large_too_slow_and_not_utf8_are_refused_with_their_reason(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    _, server = served
    assert post(server.url, b"x" * (65 * 1024)) == 413
    assert post(server.url, b"\xff\xfe{}", sign=False) == 401  # the signature comes first
    assert post(server.url, b"{}", headers={"Content-Length": "-1"}) in (400, 413)


def test_health_and_readiness(served: tuple[OfflineBot, BackgroundServer]) -> None:
    _, server = served
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(server.origin + path, timeout=5) as response:
            assert response.status == 200
    with (
        OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET) as bot,
        BackgroundServer(build_asgi_app(bot.app, ready=lambda: False)) as starting,
    ):
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(starting.origin + "/readyz", timeout=5)
        assert caught.value.code == 503
        caught.value.close()


def test_an_event_our_code_fails_on_is_logged_and_acknowledged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET) as bot:

        def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("boom")

        # Both ways in break: Bolt's intake middleware, and the quick path's (a channel
        # message takes it), which applies the event to the caches after its commit.
        bot.runtime.intake = broken  # type: ignore[method-assign]
        bot.runtime.engine.apply = broken  # type: ignore[method-assign]
        with (
            BackgroundServer(build_asgi_app(bot.app)) as server,
            caplog.at_level(logging.WARNING),
        ):
            body = json.dumps(mention_pair(ts(10), "hi")[0]).encode()
            assert post(server.url, body) == 200
        assert any("boom" in r.getMessage() or r.exc_info for r in caplog.records)


def test_an_event_the_disk_could_not_store_answers_503_so_slack_retries_it(
    tmp_path: Path,
) -> None:
    with OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET, data_dir=tmp_path) as bot:
        journal = bot.runtime.turns
        assert isinstance(journal, TurnJournal) and journal._handle is not None
        journal._handle.close()
        journal._handle = open("/dev/full", "a", encoding="utf-8")  # noqa: SIM115 - the disk is full
        with BackgroundServer(build_asgi_app(bot.app)) as server:
            body = json.dumps(mention_pair(ts(10), "hi")[1]).encode()
            assert post(server.url, body) == 503
            assert post(server.url, body) == 200  # Slack's retry, with room on the disk
        bot.runtime.runner.drain(10)
        assert journal.is_done(f"{CHANNEL}:{ts(10)}")  # queued once, then handled
