"""Helpers for the process tests of replicas: `chanctx run --http` processes on one real Redis,
Slack's deliveries spread over them, and what the fake Slack says was posted."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess

__all__ = [
    "answered",
    "parts_posted",
    "readiness",
    "replica",
    "replica_status",
    "request_bodies",
    "start_all",
    "wait_for",
    "wait_ready",
]


def replica(
    workdir: Path, slack_url: str, claude_url: str, redis_url: str | None, **env: str
) -> BotProcess:
    """One replica (its own data dir and port); ``redis_url`` None: a single local process."""
    workdir.mkdir(parents=True, exist_ok=True)
    bot = BotProcess(workdir / "data", slack_url, claude_url)
    if redis_url is not None:
        bot.env["CHANCTX_REDIS_URL"] = redis_url
    bot.env.update(env)
    return bot


def start_all(bots: list[BotProcess]) -> None:
    """Start every replica at once (two cores: no need to wait for one before the next), then
    wait until each says it is ready."""
    errors: list[BaseException] = []

    def start(bot: BotProcess) -> None:
        try:
            bot.start(timeout=300)  # a loaded machine may take a minute to import
        except BaseException as error:  # reported below, on the test's thread
            errors.append(error)

    threads = [threading.Thread(target=start, args=(bot,)) for bot in bots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    for bot in bots:
        wait_ready(bot)


def readiness(bot: BotProcess) -> int | None:
    """The status /readyz answers (None if nothing answers)."""
    return _readyz(bot)[0]


def replica_status(bot: BotProcess) -> dict[str, Any]:
    """What /readyz says of the replica (turns taken and claimed, changes applied)."""
    body = _readyz(bot)[1]
    return dict(body.get("replica") or {})


def _readyz(bot: BotProcess) -> tuple[int | None, dict[str, Any]]:
    url = f"http://127.0.0.1:{bot.port}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return int(error.code), json.loads(error.read() or b"{}")
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return None, {}


def wait_for(condition: Any, timeout: float, what: str, *, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every)
    raise AssertionError(f"not within {timeout:g} s: {what}")


def wait_ready(bot: BotProcess, timeout: float = 30) -> None:
    wait_for(lambda: readiness(bot) == 200, timeout, f"replica ready: {bot.log_tail()}")


def parts_posted(slack: FakeSlackAPI, channel: str) -> Counter[tuple[str, int]]:
    """(turn id, part) of every answer part the bot posted, counted: 2 is a duplicate."""
    found: Counter[tuple[str, int]] = Counter()
    for message in slack.messages(channel):
        metadata = message.get("metadata") or {}
        payload = metadata.get("event_payload") or {}
        if metadata.get("event_type") == "chanctx_turn":
            found[(str(payload.get("turn")), int(payload.get("part", -1)))] += 1
    return found


def answered(slack: FakeSlackAPI, channel: str) -> set[str]:
    return {turn for turn, _ in parts_posted(slack, channel)}


def request_bodies(requests: list[Any]) -> list[str]:
    """The Messages API request bodies as canonical JSON, in arrival order."""
    return [
        json.dumps(r.body, sort_keys=True)
        for r in requests
        if r.path == "/v1/messages" and r.method == "POST"
    ]
