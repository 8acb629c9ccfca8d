"""`chanctx forget` against a real `chanctx run --http`: while it runs (the command asks the
bot's admin route) and after it stopped (the command opens the store itself). Before, the
secrets are in the store, in the session logs of two answers and in the tool results Claude
was sent; after `forget --user` and `forget --message LINK`, the query API no longer returns
them, a new answer's tool result does not hold them, and no byte of any file of the data dir
(the SQLite file, its WAL and shared memory included) does.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, envelope, mention_pair, message, ts

KEY = "forget-process-reader-01"
BY_USER = b"opal-thunder-58"  # U9 wrote it: `forget --user U9`
BY_LINK = b"cobalt-heron-3310"  # one message: `forget --message <permalink>`
OFFLINE = b"saffron-gull-7702"  # U7, forgotten with the bot stopped
KEPT = b"terrace"


def query(base: str, text: str) -> str:
    body = json.dumps({"query": text, "channel": CHANNEL, "format": "text"}).encode()
    request = urllib.request.Request(
        base + "/api/context/query",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.dumps(json.loads(answer.read()))


def holders(data: Path, needle: bytes) -> list[str]:
    """Every file of the data dir whose bytes hold ``needle``."""
    return sorted(
        str(p.relative_to(data))
        for p in data.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def forget(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CHANCTX_DATA_DIR": str(data)}
    return subprocess.run(
        [sys.executable, "-m", "chanctx.bot.cli", "forget", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def ask(slack: FakeSlackAPI, bot: BotProcess, at: float, question: str) -> None:
    """A mention; returns once the bot posted its answer."""
    answered = len([m for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER])
    pair = mention_pair(ts(at), question)
    slack.mirror_event(pair[0]["event"])
    for one in pair:
        assert post_signed(bot.url, one) == 200
    deadline = time.monotonic() + 120
    while len([m for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER]) == answered:
        assert time.monotonic() < deadline, bot.log_tail()
        time.sleep(0.1)


def tool_results(claude: FakeAnthropicAPI, since: int) -> str:
    """Every tool result the bot sent Claude in the requests after the first ``since``."""
    found: list[Any] = []
    for request in claude.requests[since:]:
        body = request.body if isinstance(request.body, dict) else {}
        for turn in body.get("messages") or []:
            for block in turn.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(block.get("content"))
    return json.dumps(found)


@pytest.mark.slow
def test_forget_while_running_and_while_stopped(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({KEY: [CHANNEL]}))
    # The secrets first, then enough chatter that they are out of the attached snapshot's
    # window: Claude's channel_context tool has to fetch them, so its result quotes them.
    said = [
        message(ts(1), f"the vpn shared secret is {BY_USER.decode()}", user="U9"),
        message(ts(2), f"the backup passphrase is {BY_LINK.decode()}", user="U1"),
        message(ts(3), f"the alarm code is {OFFLINE.decode()}", user="U7"),
        message(ts(4), "lunch is on the terrace today", user="U2"),
    ]
    said += [
        message(ts(n), f"standup note {n}: nothing blocking, reviews pending", user="U1")
        for n in range(10, 70)
    ]
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url, extra_args=("--api-keys", str(keys)))
        bot.start(timeout=300)
        base = bot.url.removesuffix("/slack/events")
        try:
            for event in said:
                assert post_signed(bot.url, envelope(event)) == 200
            ask(slack, bot, 80, "what is the vpn shared secret?")
            ask(slack, bot, 81, "what is the backup passphrase?")
            ask(slack, bot, 82, "what is the alarm code?")
            # The test means something only if the secrets were quoted outside the store.
            for needle in (BY_USER, BY_LINK, OFFLINE):
                held = holders(data, needle)
                print(f"\n{needle.decode()} before: in {held}")
                assert any(h.startswith("sessions/") for h in held), needle
                assert needle.decode() in tool_results(claude, 0)
            assert BY_USER.decode() in query(base, "vpn shared secret")

            by_user = forget(data, "--user", "U9")
            assert by_user.returncode == 0, by_user.stderr
            assert "user U9: 1 message erased" in by_user.stdout, by_user.stdout
            link = f"https://acme.slack.com/archives/{CHANNEL}/p{ts(2).replace('.', '')}"
            by_link = forget(data, "--message", link)
            assert by_link.returncode == 0, by_link.stderr
            assert "1 message erased" in by_link.stdout, by_link.stdout
            print(f"\nwhile running: {by_user.stdout.strip()}\n  {by_link.stdout.strip()}")

            for question in ("vpn shared secret", "backup passphrase"):
                answer = query(base, question)
                assert BY_USER.decode() not in answer and BY_LINK.decode() not in answer
            asked_before = claude.count
            ask(slack, bot, 90, "what is the vpn shared secret?")
            later = tool_results(claude, asked_before)
            assert later != "[]" and BY_USER.decode() not in later, later
            for needle in (BY_USER, BY_LINK):
                assert holders(data, needle) == [], (needle, holders(data, needle))
            assert holders(data, OFFLINE) and holders(data, KEPT)
        finally:
            bot.stop()

    offline = forget(data, "--user", "U7")
    assert offline.returncode == 0, offline.stderr
    assert "user U7: 1 message erased" in offline.stdout, offline.stdout
    print(f"stopped: {offline.stdout.strip()}")
    for needle in (BY_USER, BY_LINK, OFFLINE):
        assert holders(data, needle) == [], (needle, holders(data, needle))
    assert holders(data, KEPT), "the rest of the channel is kept"
    files = sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file())
    print(f"grepped {len(files)} files of the data dir after: {files}")


@pytest.mark.slow
def test_retention_purges_a_running_bots_store_without_a_restart(tmp_path: Path) -> None:
    """`--retention-days 1` with `--purge-interval 1`: a message stored 15 seconds inside
    the retention period leaves every file of the data dir once it ages past it."""
    data = tmp_path / "data"
    aging = b"ember-falcon-2291"
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(
            data,
            slack.url,
            claude.url,
            extra_args=("--retention-days", "1", "--purge-interval", "1"),
        )
        bot.start(timeout=300)
        try:
            now = int(time.time())
            fresh = message(f"{now}.000200", "the terrace is booked", user="U2")
            stamp = f"{now - 86_400 + 15}.000100"  # 15 s short of a day old
            old = message(stamp, f"the door code is {aging.decode()}", user="U1")
            for event in (fresh, old):
                assert post_signed(bot.url, envelope(event)) == 200
            assert holders(data, aging), "stored first"
            deadline = time.monotonic() + 120
            while holders(data, aging):
                assert time.monotonic() < deadline, (holders(data, aging), bot.log_tail())
                time.sleep(0.5)
            assert holders(data, KEPT), "a message inside the retention period stays"
            assert bot.process is not None and bot.process.poll() is None  # no restart
        finally:
            bot.stop()
