"""HTTP mode (signed requests over loopback), start-up settings, and record's redaction."""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from chanctx.bot.cli import main
from chanctx.bot.launch.settings import SettingsError, load_settings
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.replay.record import Recorder, redact
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


@pytest.mark.parametrize(
    ("http", "env", "message"),
    [
        (False, {}, "SLACK_BOT_TOKEN is not set"),
        (
            False,
            {"SLACK_BOT_TOKEN": "xoxp-user-token"},
            "SLACK_BOT_TOKEN does not look right: it should start with 'xoxb-'",
        ),
        (False, {"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_APP_TOKEN is not set"),
        (
            False,
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-2"},
            "SLACK_APP_TOKEN does not look right",
        ),
        (True, {"SLACK_BOT_TOKEN": "xoxb-1"}, "SLACK_SIGNING_SECRET is not set"),
    ],
)
def test_missing_or_malformed_settings_name_the_setting(
    http: bool, env: dict[str, str], message: str
) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        load_settings(http=http, env=env)
    for value in env.values():
        assert value not in str(caught.value)  # never echo a secret


def test_run_without_settings_stops_with_one_clear_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(name, raising=False)
    assert main(["run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["chanctx: SLACK_BOT_TOKEN is not set: the bot token from OAuth & Permissions."]


def test_valid_settings_load() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "ANTHROPIC_API_KEY": "k-123"}
    settings = load_settings(http=True, port=8080, env=env)
    assert settings.mode == "http" and settings.port == 8080 and settings.model == "claude-sonnet-5"
    assert "xoxb-1" not in repr(settings) and "k-123" not in repr(settings)


def test_claude_needs_a_key_unless_context_only() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
    with pytest.raises(SettingsError, match="ANTHROPIC_API_KEY is not set"):
        load_settings(http=False, env=env)
    settings = load_settings(
        http=False, claude=False, env={**env, "CHANCTX_MODEL": "claude-opus-4-8"}
    )
    assert settings.anthropic_api_key is None and settings.model == "claude-opus-4-8"


def test_redaction_removes_every_token_shape() -> None:
    envelope = {
        "token": "verification-token-value",
        "event": {
            "text": "my token is xoxb-1234-5678-abcdef and xapp-1-A1-2-ff, see xoxp-9-9",
            "files": [{"url_private": "https://files.slack.com/x?t=xoxe-1-abc"}],
        },
        "authorizations": [{"user_id": "U1"}],
    }
    cleaned = json.dumps(redact(envelope))
    for secret in ("verification-token-value", "xoxb-1234", "xapp-1-A1", "xoxp-9", "xoxe-1-abc"):
        assert secret not in cleaned
    assert redact(envelope)["authorizations"] == [{"user_id": "U1"}]


def test_record_writes_a_replayable_fixture(tmp_path: Path) -> None:
    from chanctx.bot.launch.one_workspace import known_state
    from chanctx.bot.replay.fixture import load_fixture
    from chanctx.bot.replay.runner import replay

    recorder = Recorder(tmp_path / "rec")
    # Recorded first, in delivery order, as `chanctx record` does (a channel message event
    # ends in the intake middleware, so a recorder after it would never see one).
    with OfflineBot(copy.deepcopy(STATE), before=[recorder.middleware]) as bot:
        for item in mention_pair(ts(10), "status? my token is xoxb-1-2-3"):
            item["token"] = "a-verification-token"
            bot.dispatch(item)
        recorder.write_state(known_state(bot.runtime))
    recorder.close()
    lines = (tmp_path / "rec" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert "xoxb-1-2-3" not in "".join(lines) and "a-verification-token" not in "".join(lines)
    state = json.loads((tmp_path / "rec" / "slack_api.json").read_text())
    assert state["auth"]["user_id"] == "U0BOT00001"
    assert state["users"]["U1"]["profile"]["display_name"] == "Sam"  # resolved while running

    report = replay(load_fixture(tmp_path / "rec"))
    assert len(report["turns"]) == 1
    assert report["turns"][0]["context"]["snapshot"]["anchor"]["author"]["display_name"] == "Sam"


def test_oauth_needs_http_and_the_app_credentials_not_a_bot_token() -> None:
    with pytest.raises(SettingsError, match="--oauth needs --http"):
        load_settings(env={"CHANCTX_OAUTH": "1", "SLACK_APP_TOKEN": "xapp-1"}, claude=False)
    oauth = {"CHANCTX_OAUTH": "1", "SLACK_SIGNING_SECRET": "s"}
    with pytest.raises(SettingsError, match="SLACK_CLIENT_ID is not set"):
        load_settings(http=True, env=oauth, claude=False)
    with pytest.raises(SettingsError, match="SLACK_CLIENT_SECRET is not set") as caught:
        load_settings(http=True, env={**oauth, "SLACK_CLIENT_ID": "11.22"}, claude=False)
    settings = load_settings(
        http=True,
        claude=False,
        env={**oauth, "SLACK_CLIENT_ID": "11.22", "SLACK_CLIENT_SECRET": "shh-secret"},
    )
    assert settings.oauth and settings.bot_token == "" and "shh-secret" not in repr(settings)
    assert "shh-secret" not in str(caught.value)
