"""`chanctx fakes`: the fakes as servers on the ports asked for, with seeded post errors; and
`SLACK_API_URL` accepts only Slack's HTTPS hosts or loopback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from chanctx.bot.launch.settings import SettingsError, load_settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bench._process import free_port
from tests.support.paths import ROOT

DEMO = ROOT / "fixtures" / "demo"


@pytest.mark.slow
def test_fakes_serve_the_fixture_and_fail_posts_at_the_asked_rate() -> None:
    slack_port, anthropic_port = free_port(), free_port()
    command = [sys.executable, "-m", "chanctx.bot.cli", "fakes", str(DEMO),
               "--slack-port", str(slack_port), "--anthropic-port", str(anthropic_port),
               "--post-error-rate", "0.5", "--seed", "3"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(2)]
        assert lines == [
            f"SLACK_API_URL=http://127.0.0.1:{slack_port}/api/",
            f"ANTHROPIC_BASE_URL=http://127.0.0.1:{anthropic_port}",
        ]
        client = WebClient(token="xoxb-smoke", base_url=lines[0].split("=", 1)[1])
        assert client.auth_test()["user_id"] == "U0CHANCTX0"
        outcomes = []
        for n in range(40):
            try:
                client.chat_postMessage(channel="C0INCIDENT", text=f"post {n}")
                outcomes.append("ok")
            except SlackApiError as error:
                outcomes.append(str(error.response.status_code))
        failed = len([o for o in outcomes if o != "ok"])
        assert 8 <= failed <= 32 and {"500", "429"} <= set(outcomes)
        history = client.conversations_history(channel="C0INCIDENT", limit=200)["messages"]
        assert sum(m.get("text", "").startswith("post ") for m in history) == 40 - failed
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
    assert process.returncode in (0, -15)


@pytest.mark.slow
def test_fakes_refuse_a_bad_rate_in_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "chanctx.bot.cli", "fakes", str(DEMO), "--slack-port", "1",
         "--anthropic-port", "2", "--post-error-rate", "1.5"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == "chanctx: --post-error-rate must be between 0 and 1, got 1.5"


@pytest.mark.parametrize(
    ("url", "accepted"),
    [
        ("https://slack.com/api/", True),
        ("https://acme.enterprise.slack.com/api", True),
        ("http://127.0.0.1:8101/api/", True),
        ("http://localhost:9/api/", True),
        ("http://slack.com/api/", False),  # the token never travels in the clear
        ("https://slack.com.evil.example/api/", False),
        ("https://example.com/api/", False),
    ],
)
def test_slack_api_url_only_slack_or_loopback(url: str, accepted: bool) -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_API_URL": url}
    if accepted:
        settings = load_settings(env=env, claude=False)
        assert settings.slack_api_url.rstrip("/") == url.rstrip("/")
    else:
        with pytest.raises(SettingsError, match=r"SLACK_API_URL must be https on slack\.com"):
            load_settings(env=env, claude=False)
