"""A kill -9 between the commit and the full-text indexing loses nothing from search: a real
`chanctx run --http` that indexes after the commit (``--index-after``, here longer than the
test) acknowledges signed messages, one of them deleted before any indexing ran, and is killed.
The store then holds the messages and none of their words in its index; after a restart the
index has caught up: the channel store's search and `chanctx query` find the fact, and the
deleted message's text is in no search answer, nor in any file once the bot stops."""

from __future__ import annotations

import copy
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import SqliteChannelStore

from bench._process import BotProcess, post_signed
from tests.support.slack_events import CHANNEL, STATE, TEAM, envelope, message, ts

FACT = "the vault combination is 4417 amberwick"
DELETED = "launch password swordfish9931"
MESSAGES = 40


def index_state(data: Path) -> tuple[int, int]:
    """(the indexed-through mark, the newest message row id) as the file holds them."""
    db = sqlite3.connect(f"file:{data / 'channels.sqlite3'}?mode=ro", uri=True)
    try:
        (mark,) = db.execute("SELECT value FROM meta WHERE key = 'indexed_through'").fetchone()
        (newest,) = db.execute("SELECT max(id) FROM messages").fetchone()
        return int(mark), int(newest)
    finally:
        db.close()


def found(data: Path, words: list[str]) -> list[str]:
    reader = SqliteChannelStore(data, read_only=True)
    try:
        return [c.ts for c in reader.search_candidates(TEAM, CHANNEL, words, 10)]
    finally:
        reader.close()


@pytest.mark.slow
def test_a_kill_before_indexing_loses_nothing_from_search(tmp_path: Path) -> None:
    data = tmp_path / "data"
    events = [message(ts(n), f"status update {n}: builds green") for n in range(MESSAGES)]
    events[5] = message(ts(5), FACT)
    gone = message(ts(MESSAGES), DELETED)
    deletion = {
        "type": "message", "subtype": "message_deleted", "channel": CHANNEL,
        "deleted_ts": gone["ts"], "previous_message": {"type": "message", "ts": gone["ts"]},
        "hidden": True, "event_ts": ts(MESSAGES + 1), "ts": ts(MESSAGES + 1),
        "channel_type": "channel",
    }  # fmt: skip
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url, extra_args=("--index-after", "3600"))
        bot.start(timeout=300)
        try:
            for event in [*events, gone, deletion]:
                assert post_signed(bot.url, envelope(event)) == 200, bot.log_tail()
            bot.kill()  # SIGKILL: acknowledged, committed, not indexed

            mark, newest = index_state(data)
            assert mark < newest, "the kill should land before the indexing batch"
            assert found(data, ["amberwick"]) == []  # stored, not in the index yet

            bot.start(timeout=300)  # the open indexes what the kill left
            assert found(data, ["amberwick"]) == [ts(5)]
            assert found(data, ["swordfish9931"]) == []
            mark, newest = index_state(data)
            assert mark == newest
            answer = subprocess.run(
                [sys.executable, "-m", "chanctx.bot.cli", "query", CHANNEL, "vault combination",
                 "--format", "text"],
                env={**os.environ, "CHANCTX_DATA_DIR": str(data)},
                capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
            assert answer.returncode == 0, answer.stderr
            assert "4417 amberwick" in answer.stdout
            assert "swordfish9931" not in answer.stdout
        finally:
            bot.stop()
    holders = [
        p.name for p in data.rglob("*") if p.is_file() and b"swordfish9931" in p.read_bytes()
    ]
    assert not holders, f"the deleted text is still on disk in {holders}"
