"""What an operator gets wrong at start is one line naming the setting to change, exit status 2,
before anything claims to be serving and before any network call it does not need."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from chanctx.bot.cli import main


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def env_for(slack_url: str) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_SIGNING_SECRET": "secret",
        "ANTHROPIC_API_KEY": "key",
        "SLACK_API_URL": slack_url,
    }


def run(
    args: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    status = main(args, env=env)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert "serving" not in captured.err + captured.out
    return status, captured.err.strip()


@pytest.fixture
def nobody_home() -> str:
    """A Slack URL where nothing listens: a start that reaches the network fails there."""
    return f"http://127.0.0.1:{free_port()}/api/"


def test_a_port_in_use_is_named_with_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nobody_home: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [
            "run",
            "--http",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path),
        ]
        status, err = run(args, env_for(nobody_home), capsys)
    assert status == 2
    assert err == (
        f"chanctx: port {port} on 127.0.0.1 is already in use; choose another with --port or "
        "CHANCTX_PORT"
    )


@pytest.mark.slow
def test_slack_unreachable_names_the_url_and_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nobody_home: str
) -> None:
    args = ["run", "--http", "--port", str(free_port()), "--data-dir", str(tmp_path)]
    status, err = run(args, env_for(nobody_home), capsys)
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"chanctx: Slack is not reachable at {nobody_home} (")
    assert "SLACK_API_URL" in err


@pytest.fixture
def refusing_slack() -> Iterator[str]:
    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"ok": False, "error": "invalid_auth"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/"
    server.shutdown()
    server.server_close()


def test_a_refused_token_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], refusing_slack: str
) -> None:
    args = ["run", "--http", "--port", str(free_port()), "--data-dir", str(tmp_path)]
    status, err = run(args, env_for(refusing_slack), capsys)
    assert status == 2
    assert err == (
        f"chanctx: Slack at {refusing_slack} refused the bot token (auth.test: invalid_auth); "
        "check SLACK_BOT_TOKEN"
    )


def test_the_keys_file_is_checked_before_any_network_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nobody_home: str
) -> None:
    keys = tmp_path / "keys.json"
    keys.write_text("{not json")
    args = ["run", "--http", "--port", str(free_port()), "--data-dir", str(tmp_path / "d"),
            "--api-keys", str(keys)]  # fmt: skip
    status, err = run(args, env_for(nobody_home), capsys)
    assert status == 2 and err.startswith("chanctx: --api-keys") and "Slack" not in err


@pytest.mark.parametrize("kind", ["a file", "under a file"])
def test_an_unusable_data_dir_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], nobody_home: str, kind: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    data = blocker if kind == "a file" else blocker / "data"
    args = ["run", "--http", "--port", str(free_port()), "--data-dir", str(data)]
    status, err = run(args, env_for(nobody_home), capsys)
    assert status == 2 and err.startswith(f"chanctx: --data-dir {data} cannot be used (")
    assert "CHANCTX_DATA_DIR" in err and "Slack" not in err


def test_bolts_unused_token_warning_is_not_printed_on_every_start(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from chanctx.bot.launch.preflight import quiet_token_warning
    from slack_bolt import App
    from slack_sdk import WebClient

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test-token")  # as an operator's start has it
    logger = logging.getLogger("chanctx.bolt")
    for earlier in list(logger.filters):  # a start earlier in this process installed it
        logger.removeFilter(earlier)

    def start() -> None:
        App(client=WebClient(token="xoxb-test-token"), signing_secret="s",
            token_verification_enabled=False, logger=logger)  # fmt: skip

    with caplog.at_level(logging.WARNING):
        start()
    assert "`token` will be unused" in caplog.text  # Bolt says it without the filter
    caplog.clear()
    quiet_token_warning(logger)
    with caplog.at_level(logging.WARNING):
        start()
    assert "will be unused" not in caplog.text


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (
            [],
            {"CHANCTX_SLACK_TIER": "gold"},
            "CHANCTX_SLACK_TIER must be one of standard, limited, got 'gold'",
        ),
        (
            ["--backfill", "sometimes"],
            {},
            "--backfill must be one of off, recent, all, got 'sometimes'",
        ),
        (
            ["--backfill-days", "0"],
            {},
            "--backfill-days must be a positive whole number of days, got '0'",
        ),
        (
            ["--slack-minute-seconds", "-1"],
            {},
            "--slack-minute-seconds must be a positive number of seconds",
        ),
    ],
)
def test_a_bad_tier_or_backfill_setting_is_one_line(
    args: list[str], env: dict[str, str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = run(["run", *args], {**env_for("http://127.0.0.1:9/api/"), **env}, capsys)
    assert status == 2
    assert named in err and len(err.splitlines()) == 1, err
