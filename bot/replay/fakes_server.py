"""``chanctx fakes``: the fake Slack Web API and the fake Messages API as servers, until killed.

For staging smoke tests and process-level tests: point ``chanctx run`` at them with
``SLACK_API_URL=http://127.0.0.1:P/api/`` and ``ANTHROPIC_BASE_URL=http://127.0.0.1:Q``. The Slack
side serves the fixture's ``slack_api.json`` and everything the bot posts (readable back with
``conversations.history`` / ``conversations.replies``); the Messages API side serves the
fixture's cassette, then the offline model. Loopback only.

Socket Mode too: a bot run with an app-level token (``SLACK_APP_TOKEN=xapp-...``) gets the fake's
WebSocket from ``apps.connections.open``, and ``POST /socket-mode/send`` on the Slack port delivers
an envelope to it and says whether it was acknowledged.

For a smoke test: ``oauth.v2.access`` answers any code with the fixture's bot token; ``GET
/_fake/calls`` and ``GET /_fake/messages`` say what the bot asked and wrote; ``POST /_fake/events``
makes a message the test sent the bot known to Slack; ``slack_tier="limited"`` serves history
reads as Slack serves apps outside its Marketplace (one call a minute, 15 messages), ``"standard"``
as Tier 3 (50 a minute); ``slack_minute_seconds`` makes that minute shorter (tests only).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replay.fixture import load_fixture

__all__ = ["serve_fakes"]


def serve_fakes(
    fixture_dir: str | Path,
    *,
    slack_port: int,
    anthropic_port: int,
    anthropic_latency_ms: int = 0,
    post_error_rate: float = 0.0,
    seed: int = 0,
    slack_tier: str = "standard",
    slack_minute_seconds: float = 60.0,
    ready: threading.Event | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Serve until SIGTERM / SIGINT (or ``stop`` is set); print where, once listening."""
    fixture = load_fixture(fixture_dir)
    stop = stop or threading.Event()
    with (
        FakeSlackAPI(
            fixture.slack_api,
            port=slack_port,
            post_error_rate=post_error_rate,
            seed=seed,
            socket_mode=True,
            tier=slack_tier,
            minute_seconds=slack_minute_seconds,
        ) as slack,
        FakeAnthropicAPI(
            cassette=fixture.cassette, port=anthropic_port, latency_ms=anthropic_latency_ms
        ) as claude,
    ):
        if threading.current_thread() is threading.main_thread():

            def finish(signum: int, frame: FrameType | None) -> None:
                stop.set()

            signal.signal(signal.SIGTERM, finish)
            signal.signal(signal.SIGINT, finish)
        print(f"SLACK_API_URL={slack.url}", flush=True)
        print(f"ANTHROPIC_BASE_URL={claude.url}", flush=True)
        if ready is not None:
            ready.set()
        stop.wait()
