"""A proxy that mounts the bot under a root path sends Slack's events through Starlette's
router, not the path served ahead of it: the same answers come back that way."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import time
from typing import Any

import pytest
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import build_asgi_app

from tests.support.slack_events import STATE

SECRET = "5d1c0e9a7b3f42e6a8c1d2e3f4a5b6c7"  # a made-up signing secret for the test only


def _call(app: Any, body: bytes, signature: bytes, root: str) -> tuple[int, bytes]:
    stamp = str(int(time.time())).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "root_path": root,
        "path": f"{root}/slack/events",
        "raw_path": f"{root}/slack/events".encode(),
        "query_string": b"",
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 5000),
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-slack-request-timestamp", stamp),
            (b"x-slack-signature", signature or _sign(stamp, body)),
        ],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


def _sign(stamp: bytes, body: bytes) -> bytes:
    digest = hmac.new(SECRET.encode(), b"v0:" + stamp + b":" + body, hashlib.sha256)
    return b"v0=" + digest.hexdigest().encode()


@pytest.mark.parametrize("root", ["", "/bot"])
def test_signed_and_unsigned_events_get_the_same_answers_under_a_root_path(root: str) -> None:
    challenge = json.dumps({"type": "url_verification", "challenge": "c-42", "token": "t"}).encode()
    with OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET) as bot:
        app = build_asgi_app(bot.app)
        status, answer = _call(app, challenge, b"", root)
        assert status == 200 and b"c-42" in answer
        status, answer = _call(app, challenge, b"v0=" + b"0" * 64, root)
        assert status == 401
        assert json.loads(answer) == {"ok": False, "error": "invalid or stale signature"}
