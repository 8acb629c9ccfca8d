"""Helpers for the process tests of replicas with a channel store: a database of the test's own
on a real PostgreSQL, the query API of a running replica, and deliveries retried as Slack
retries a refused event."""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench._process import BotProcess, post_signed
from tests.support.postgres_server import PostgresServer
from tests.support.replica_processes import replica, wait_ready
from tests.support.slack_events import CHANNEL

__all__ = [
    "API_KEY",
    "api_keys",
    "database",
    "deliver_until_taken",
    "found",
    "not_ready_because",
    "start_replicas",
    "store_replica",
]

API_KEY = "replica-store-reader-01"


def database(server: PostgresServer) -> str:
    """A database of the test's own on ``server``; its URL."""
    name = f"t_{secrets.token_hex(6)}"
    with server.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.url.rsplit("/", 1)[0] + "/" + name


def api_keys(workdir: Path) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    keys = workdir / "keys.json"
    keys.write_text(json.dumps({API_KEY: [CHANNEL]}))
    return keys


def store_replica(
    workdir: Path, slack_url: str, claude_url: str, redis_url: str, keys: Path,
    database_url: str | None = None,
) -> BotProcess:  # fmt: skip
    """A `chanctx run --http` replica with the query API on, on Redis and, given a URL, on
    the shared PostgreSQL store."""
    env = {"CHANCTX_DATABASE_URL": database_url} if database_url else {}
    bot = replica(workdir, slack_url, claude_url, redis_url, CHANCTX_API_KEYS=str(keys), **env)
    return bot


def found(bot: BotProcess, text: str, wanted: str) -> bool:
    """True if the replica's query API answer for ``text`` holds ``wanted``."""
    body = json.dumps({"query": text, "channel": CHANNEL, "format": "text"}).encode()
    request = urllib.request.Request(
        bot.url.removesuffix("/slack/events") + "/api/context/query",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {API_KEY}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            rendered = str(json.loads(answer.read()).get("rendered", ""))
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
    return wanted in rendered


def deliver_until_taken(
    url: str,
    envelope: dict[str, Any],
    *,
    timeout: float = 120,
    refused: list[int | None] | None = None,
) -> list[int | None]:
    """Deliver as Slack does: a refused delivery (non-2xx, no answer) is sent again, with the
    retry header, until one is taken; every status seen, in order (each refusal also goes to
    ``refused`` as it happens)."""
    statuses: list[int | None] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = post_signed(url, envelope, retry=len(statuses))
        statuses.append(status)
        if status == 200:
            return statuses
        if refused is not None:
            refused.append(status)
        time.sleep(0.2)
    raise AssertionError(f"never taken in {timeout:g} s: {statuses[-5:]}")


def not_ready_because(bot: BotProcess) -> str:
    """What a replica's ``/readyz`` says about its channel store while it is 503 ("" when it
    is ready or says nothing of the store)."""
    url = bot.url.removesuffix("/slack/events") + "/readyz"
    try:
        with urllib.request.urlopen(url, timeout=5):
            return ""
    except urllib.error.HTTPError as error:
        return str(json.loads(error.read() or b"{}").get("channel_store", ""))
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return ""


def start_replicas(bots: list[BotProcess], timeout: float = 300) -> None:
    """Start the replicas one after another (a shared machine may take a minute to import a
    process), then wait until each says it is ready."""
    for bot in bots:
        bot.start(timeout=timeout)
    for bot in bots:
        wait_ready(bot, timeout=timeout)
