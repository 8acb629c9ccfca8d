"""Start-up settings: a missing or malformed one is named (never echoing a secret), a good set
loads, Claude needs its key unless the bot only gives context, and OAuth needs HTTP and the app's
credentials instead of a bot token."""

from __future__ import annotations

import pytest
from chanctx.bot.cli import main
from chanctx.bot.launch.settings import SettingsError, load_settings


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
