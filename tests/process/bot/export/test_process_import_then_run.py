"""An export imported by the real ``chanctx import``, then served by a real ``chanctx run
--http`` on the same data dir: the query API and a mention's ``channel_context`` find what only
the export held (an old thread's reply), and the bot reads none of the imported range from
Slack: no ``conversations.replies`` of an imported thread, and a ``conversations.history``
call only for what is newer than the export (the gap since it was taken).

The fake Slack holds the same history, so a bot that paged it would be seen paging it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess
from bench._served_process import ready_status
from tests.process.bot.core.test_process_store_restart import KEY, query
from tests.support.answered_mention import ask_by_mention
from tests.support.slack_events import (
    CHANNEL,
    STATE,
    TEAM,
    ts,
)

pytestmark = pytest.mark.slow

CHANCTX = [sys.executable, "-m", "chanctx.bot.cli"]
MESSAGES = 3_000  # 30 days of 100, every 25th a thread root with 2 replies
FACT = "the spare badge is held by Marguerite at reception"
QUESTION = "who holds the spare badge?"
DAY = 86_400


def history() -> list[dict[str, Any]]:
    """The channel's messages before the export was taken, oldest first (the fact: a reply
    in the oldest thread)."""
    out: list[dict[str, Any]] = []
    for n in range(MESSAGES):
        at = ts(-40 * DAY + n * 800)
        text = f"status update {n}: builds green, queue depth {n % 17}"
        item: dict[str, Any] = {"type": "message", "user": "U2" if n % 2 else "U1",
                                "ts": at, "text": text}  # fmt: skip
        out.append(item)
        if n % 25 == 0:
            replies = [ts(-40 * DAY + n * 800 + 1 + r, 200) for r in range(2)]
            item.update(thread_ts=at, reply_count=2, latest_reply=replies[-1],
                        reply_users=["U2"])  # fmt: skip
            for r, reply in enumerate(replies):
                said = FACT if n == 0 and r == 1 else f"ack {n}.{r}"
                out.append({"type": "message", "user": "U2", "ts": reply, "thread_ts": at,
                            "parent_user_id": item["user"], "text": said})  # fmt: skip
    return out


def write_export(path: Path, messages: list[dict[str, Any]]) -> Path:
    users = [{"id": u["id"], "team_id": TEAM, "name": u["name"],
              "profile": u.get("profile", {})} for u in STATE["users"].values()]  # fmt: skip
    days: dict[str, list[dict[str, Any]]] = {}
    for m in messages:
        day = time.strftime("%Y-%m-%d", time.gmtime(float(m["ts"])))
        days.setdefault(day, []).append(m)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("users.json", json.dumps(users))
        archive.writestr("channels.json", json.dumps([{"id": CHANNEL, "name": "general"}]))
        for day, held in days.items():
            archive.writestr(f"general/{day}.json", json.dumps(held, indent=4))
    return path


def test_an_imported_channel_is_served_without_reading_it_from_slack(tmp_path: Path) -> None:
    messages = history()
    newest = max(float(m["ts"]) for m in messages)
    imported_threads = {m["ts"] for m in messages if m.get("reply_count")}
    export = write_export(tmp_path / "export.zip", messages)
    data = tmp_path / "data"
    done = subprocess.run([*CHANCTX, "import", str(export), "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    total = len(messages)
    assert f"imported {total:,} of {total:,} messages from 1 conversations" in done.stdout

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({KEY: [CHANNEL]}))
    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: copy.deepcopy(messages)}
    with FakeSlackAPI(state) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url, extra_args=("--api-keys", str(keys)))
        bot.start(timeout=300)
        base = bot.url.removesuffix("/slack/events")
        try:
            deadline = time.monotonic() + 120
            while ready_status(base) != 200:
                assert time.monotonic() < deadline, bot.log_tail()
                time.sleep(0.05)
            found = query(base, QUESTION)["rendered"]
            assert FACT in found, found[:500]

            sent = ask_by_mention(bot, slack, claude, ts(60), QUESTION)
            calls = slack.calls
        finally:
            bot.stop()
    assert "tool_result" in sent and FACT in sent
    histories = [c.params for c in calls if c.method == "conversations.history"]
    replies = [c.params for c in calls if c.method == "conversations.replies"]
    # Only the gap since the export: every history call starts at its newest message.
    assert all(float(p.get("oldest", 0)) >= newest for p in histories), histories
    assert [p for p in replies if p.get("ts") in imported_threads] == []
    print(f"\nimport then run: {done.stdout.strip()}; Slack history calls {len(histories)} "
          f"(all newer than the export), replies of imported threads 0")  # fmt: skip
