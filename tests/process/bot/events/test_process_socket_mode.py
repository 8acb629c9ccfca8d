"""`chanctx run` in Socket Mode, as a process, against a fake Slack that speaks Socket Mode over
a real WebSocket: every envelope is acknowledged (so Slack never redelivers a poison one), and a
mention is answered exactly once, Slack's retry of it included."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replay.fake_socket_mode import FakeSocketMode
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench._process import BotProcess
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, mention_pair, ts

# Payloads Bolt's own handler raises on while building its request, or that our guard refuses;
# each was left unacknowledged (and so redelivered by Slack) before the guard.
POISON: list[Any] = [
    {"type": "event_callback", "authorizations": 5, "event": {"type": "app_mention"}},
    {"type": "event_callback", "team_id": {"id": [1]}, "event": {"type": "message"}},
    {"type": "event_callback", "event": None},
    {"type": "event_callback", "event": {"type": "message", "channel": [CHANNEL]}},
    {"type": None},
    {"container": True, "user": 1.5, "type": []},
    {"authorizations": [False, "", 714], "api_app_id": True},
    [],
    "not an object",
]

_KEYS = st.sampled_from(
    ["type", "event", "event_id", "team_id", "team", "user", "channel", "authorizations",
     "api_app_id", "enterprise_id", "is_enterprise_install", "message", "container", "actions",
     "view", "assistant_thread", "thread_ts", "ts", "text", "bot_id"]
)  # fmt: skip
_LEAF = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.floats(-1e9, 1e9)
)
PAYLOADS = st.recursive(
    _LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=6)),
    max_leaves=16,
)


def answers(slack: FakeSlackAPI, anchor: str) -> int:
    return sum(
        1
        for m in slack.messages(CHANNEL)
        if m.get("user") == BOT_USER and m.get("thread_ts") == anchor
    )


def wait_for(check: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_socket_mode_acknowledges_every_envelope_and_answers_a_mention_once(
    tmp_path: Path,
) -> None:
    with (
        FakeSlackAPI(copy.deepcopy(STATE), socket_mode=True) as slack,
        FakeAnthropicAPI() as claude,
    ):
        link = slack.socket_mode
        assert link is not None
        bot = BotProcess(
            tmp_path / "data",
            slack.url,
            claude.url,
            socket_mode=True,
            connected=lambda: link.connected,
        )
        bot.start()
        try:
            for payload in POISON:
                assert link.wait_ack(link.send(payload)), json.dumps(payload)

            @settings(
                max_examples=150,
                deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture],
            )
            @given(payload=PAYLOADS)
            def every_envelope_is_acknowledged(payload: Any) -> None:
                assert link.wait_ack(link.send(payload)), json.dumps(payload)

            every_envelope_is_acknowledged()

            pair = mention_pair(ts(10), "what broke checkout?")
            slack.mirror_event(pair[0]["event"])
            for envelope in pair:
                assert link.wait_ack(link.send(envelope))
            assert wait_for(lambda: answers(slack, ts(10)) == 1)
            for envelope in pair:  # Slack's retries, after the answer went out
                assert link.wait_ack(link.send(envelope, retry_attempt=1))
            time.sleep(1.0)
            assert answers(slack, ts(10)) == 1
            assert bot.process is not None and bot.process.poll() is None
            assert link.connections == 1  # nothing we sent made the bot drop and reconnect
        finally:
            bot.stop()


def test_the_fake_hands_the_socket_url_only_to_an_app_level_token() -> None:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    with FakeSlackAPI(copy.deepcopy(STATE), socket_mode=True) as slack:
        assert slack.socket_mode is not None
        app = WebClient(token="xapp-1-test", base_url=slack.url)
        assert app.apps_connections_open(app_token="xapp-1-test")["url"] == slack.socket_mode.url
        bot = WebClient(token="xoxb-test", base_url=slack.url)
        try:
            bot.apps_connections_open(app_token="xoxb-test")
        except SlackApiError as error:
            assert error.response["error"] == "not_allowed_token_type"
        else:
            raise AssertionError("a bot token opened a Socket Mode connection")


def test_an_envelope_sent_while_no_app_is_connected_is_refused() -> None:
    with FakeSocketMode() as link:
        assert not link.connected
        try:
            link.send({"type": "event_callback"})
        except ConnectionError as error:
            assert "no app is connected" in str(error)
        else:
            raise AssertionError("sent into the void")
