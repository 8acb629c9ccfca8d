"""Hostile families over real HTTP to the ASGI app (non-UTF-8 bodies, non-ASCII and over-long
headers, deep nesting, binary form payloads, duplicate headers), a grammar of Slack's own
shapes with fuzzed fields, poisoned mentions, and turns that hang: never a 5xx, never a
traceback, never a queued turn that cannot be answered, never one channel stopping another."""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.core.turns import Answer, AnswerRunner, Turn, TurnResult
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from hypothesis import HealthCheck, given, settings

from tests.support.raw_http import deep, raw_post, signed_with
from tests.support.slack_events import BOT_USER, CHANNEL, DM, STATE, envelope, mention_pair, ts
from tests.support.slack_grammar import slack_bodies

SECRET = "0b7d45f23f9a6c1e8c9e1d2b3a4f5e6a"  # a made-up signing secret for the test only


def signed(body: bytes, content_type: bytes = b"application/json") -> list[tuple[bytes, bytes]]:
    return signed_with(SECRET, body, content_type)


def _families() -> dict[str, tuple[bytes, list[tuple[bytes, bytes]], set[int]]]:
    """family -> (body, headers, the statuses it may get)."""
    stamp = str(int(time.time())).encode()
    binary = b"\xff\xfe\x00\x9c" + bytes(range(256))
    form = b"application/x-www-form-urlencoded"
    good = json.dumps(envelope({"type": "reaction_added", "user": "U1"})).encode()
    return {
        # Signed over the very bytes: still not a request Slack could have sent.
        "non-utf8 signed": (binary, signed(binary), {401}),
        "non-utf8 unsigned": (binary, [(b"Content-Type", b"application/json")], {401}),
        "non-ascii signature": (
            good,
            [(b"X-Slack-Request-Timestamp", stamp), (b"X-Slack-Signature", "v0=é☃".encode())],
            {401},
        ),
        "non-ascii timestamp": (
            good,
            [(b"X-Slack-Request-Timestamp", "١٢٣".encode()), (b"X-Slack-Signature", b"v0=00")],
            {401},
        ),
        "over-long header": (good, [*signed(good), (b"X-Filler", b"a" * 70_000)], {400, 431}),
        "over-long signature": (
            good,
            [(b"X-Slack-Request-Timestamp", stamp), (b"X-Slack-Signature", b"v0=" + b"f" * 8_000)],
            {401},
        ),
        "deep json": (deep(5_000), signed(deep(5_000)), {400}),
        "deep json under the parser's limit": (deep(500), signed(deep(500)), {400}),
        "deep form payload": (
            b"payload=" + deep(5_000),
            signed(b"payload=" + deep(5_000), form),
            {400},
        ),
        "binary form payload": (b"payload=" + binary, signed(b"payload=" + binary, form), {401}),
        "duplicate signatures": (
            good,
            [*signed(good), (b"X-Slack-Signature", b"v0=bad")],
            {200, 401},
        ),
        "duplicate content-length": (
            good,
            [*signed(good), (b"Content-Length", b"3"), (b"Content-Length", b"4")],
            {400},
        ),
    }


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[OfflineBot, BackgroundServer]]:
    with (
        OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET) as bot,
        BackgroundServer(build_asgi_app(bot.app, signing_secret=SECRET)) as server,
    ):
        yield bot, server


def tracebacks(records: list[logging.LogRecord]) -> list[str]:
    return [
        r.getMessage()
        for r in records
        if r.exc_info or "Traceback" in r.getMessage() or "Exception in ASGI" in r.getMessage()
    ]


@pytest.mark.parametrize("family", sorted(_families()))
def test_each_hostile_family_gets_its_4xx_without_a_traceback(
    served: tuple[OfflineBot, BackgroundServer], family: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, server = served
    body, headers, allowed = _families()[family]
    with caplog.at_level(logging.WARNING):
        status = raw_post(server.port, body, headers)
    assert status in allowed, (family, status)
    assert tracebacks(caplog.records) == []


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(item=slack_bodies())
def test_whatever_slack_could_send_with_fuzzed_fields_gets_no_5xx_and_no_traceback(
    served: tuple[OfflineBot, BackgroundServer],
    item: tuple[bytes, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    bot, server = served
    body, content_type = item
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        status = raw_post(server.port, body, signed(body, content_type.encode()))
        bot.runtime.runner.drain(30)
    assert status is not None and status < 500, (status, body[:200])
    assert tracebacks(caplog.records) == [], body[:200]
    # Whatever was queued can be answered: its anchor is a Slack message id.
    for result in bot.runtime.runner.results:
        assert len(result.turn.anchor_ts) == 17 and result.turn.anchor_ts[10] == ".", result.turn


POISONS = [("ts", p) for p in ["abc", "NaN", True, "123", "99999999999999999999999999999",
                                  None, 12, ["x"]]]  # fmt: skip
# Fields of a message intake could not record: answering it would wait on Slack's history
# reads (one a minute for new apps) for a message that is not there.
POISONS += [("files", 12), ("files", ["U1"]), ("thread_ts", "1.2.3"), ("channel", "c-1")]


@pytest.mark.slow
@pytest.mark.parametrize(("key", "poison"), POISONS, ids=repr)
def test_a_poisoned_mention_is_acknowledged_logged_once_and_never_queued(
    key: str, poison: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with OfflineBot(copy.deepcopy(STATE)) as bot:
        event = {"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER}> hi",
                 "channel": CHANNEL, "ts": ts(5), "event_ts": ts(5)}  # fmt: skip
        event[key] = poison
        with caplog.at_level(logging.WARNING):
            assert bot.dispatch(envelope(event)).status == 200
            bot.runtime.runner.drain(10)
        assert bot.runtime.turns.pending() == [] and list(bot.runtime.runner.results) == []
        about = [r for r in caplog.records if "app_mention" in r.getMessage()]
        assert len(about) == 1, [r.getMessage() for r in caplog.records]
        assert f"'{key}'" in about[0].getMessage() or "malformed" in about[0].getMessage()
        assert tracebacks(caplog.records) == []
        # And the bot answers the next ordinary mention.
        for good in mention_pair(ts(20), "still there?"):
            bot.dispatch(good)
        bot.runtime.runner.drain(10)
        assert [r.turn.anchor_ts for r in bot.runtime.runner.results] == [ts(20)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "thread",
    [None, {}, {"user_id": "U1"}, {"channel_id": 5, "thread_ts": ts(1)}, {"channel_id": DM}],
    ids=repr,
)
def test_an_assistant_thread_without_its_channel_is_logged_once_without_a_traceback(
    thread: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with OfflineBot(copy.deepcopy(STATE)) as bot:
        event: dict[str, Any] = {"type": "assistant_thread_started", "event_ts": ts(1)}
        if thread is not None:
            event["assistant_thread"] = thread
        with caplog.at_level(logging.WARNING):
            assert bot.dispatch(envelope(event)).status == 200
        assert tracebacks(caplog.records) == []
        assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) <= 1


def _turn(channel: str, n: int) -> Turn:
    return Turn(channel=channel, thread_ts=ts(n), anchor_ts=ts(n), user="U1")


def test_a_channel_of_hung_turns_never_delays_another_channels_answer() -> None:
    release = threading.Event()

    def work(turn: Turn) -> TurnResult:
        if turn.channel == "C0STUCK001":
            release.wait(60)
        return TurnResult(turn=turn, reply="ok")

    runner = AnswerRunner(work, workers=4)
    try:
        for n in range(20):  # more hung turns than workers, in threads of their own
            runner.submit(_turn("C0STUCK001", n))
        answered = runner.submit(_turn(CHANNEL, 100)).result(timeout=30)
        assert answered.reply == "ok"
        status = runner.status()
        assert status["answering"] == 3 and status["waiting"] == 17  # 3 of 4 workers at most
    finally:
        release.set()
        runner.close()
    assert runner.idle()


def test_a_turn_past_its_deadline_is_released_shown_and_its_thread_goes_on() -> None:
    release = threading.Event()
    stuck: list[Turn] = []

    def work(turn: Turn) -> TurnResult:
        if turn.anchor_ts == ts(1):
            release.wait(60)
        return TurnResult(turn=turn, reply=turn.anchor_ts)

    runner = AnswerRunner(work, workers=1, deadline=0.5, on_stuck=stuck.append)
    try:
        hung = runner.submit(_turn(CHANNEL, 1))
        same_thread = runner.submit(
            Turn(channel=CHANNEL, thread_ts=ts(1), anchor_ts=ts(2), user="U1")
        )
        assert hung.result(timeout=30).error == "no answer within 0.5 s"
        assert same_thread.result(timeout=30).reply == ts(2)  # the one worker was given back
        assert stuck == [_turn(CHANNEL, 1)]
        (shown,) = runner.status()["stuck"]  # type: ignore[misc]
        assert shown["ts"] == ts(1)
    finally:
        release.set()
    deadline = time.monotonic() + 30
    while runner.status()["stuck"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert runner.status()["stuck"] == []  # the stuck answer returned: no longer listed
    runner.close()


class _Hangs:
    def __init__(self) -> None:
        self.release = threading.Event()

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        self.release.wait(60)
        return Answer(text="a late answer nobody should see")


@dataclass
class _QuickDeadline(Runtime):
    turn_deadline: float | None = 0.5


def test_a_stuck_answer_is_told_as_a_failure_and_its_late_answer_never_posted() -> None:
    hangs = _Hangs()
    with OfflineBot(copy.deepcopy(STATE), responder=hangs, runtime_class=_QuickDeadline) as bot:
        for event in mention_pair(ts(30), "what broke?"):
            bot.dispatch(event)
        bot.runtime.runner.drain(30)
        replies = _wait_for(lambda: _replies(bot, ts(30)))
        assert len(replies) == 1 and "took longer than 0.5 s" in replies[0]["text"]
        assert _wait_for(lambda: bot.runtime.turns.is_done(f"{CHANNEL}:{ts(30)}"))
        hangs.release.set()
        _wait_for(lambda: not bot.runtime.runner.status()["stuck"])
        assert [r["text"] for r in _replies(bot, ts(30))] == [replies[0]["text"]]


def _replies(bot: OfflineBot, anchor: str) -> list[dict[str, Any]]:
    return [p for p in bot.slack.posted if p.get("thread_ts") == anchor]


def _wait_for(check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    return check()


def test_a_form_payload_slack_would_send_still_gets_through(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    _, server = served
    body = urlencode({"command": "/chanctx", "text": "help", "channel_id": CHANNEL,
                      "user_id": "U1", "team_id": "T0TEST0001"}).encode()  # fmt: skip
    assert raw_post(server.port, body, signed(body, b"application/x-www-form-urlencoded")) == 200


def test_a_turn_an_older_version_queued_at_a_bad_ts_is_dropped_on_recovery(
    tmp_path: Path,
) -> None:
    with OfflineBot(copy.deepcopy(STATE), data_dir=tmp_path) as bot:
        for anchor in ("abc", "123", ts(40)):
            turn = Turn(channel=CHANNEL, thread_ts=anchor, anchor_ts=anchor, user="U1")
            assert bot.runtime.turns.enqueue(f"{CHANNEL}:{anchor}", asdict(turn), None)
        assert bot.runtime.recover() == 1  # only the one a message id anchors
        bot.runtime.runner.drain(30)
        assert bot.runtime.turns.is_done(f"{CHANNEL}:abc")
        assert bot.runtime.turns.is_done(f"{CHANNEL}:123")
