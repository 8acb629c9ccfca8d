"""The bot's side of the channel store, in process: events are in the store before the ack, a
store that cannot take them refuses them (and lets Slack's retry through), a restart reads the
channel, its threads and its names from the store instead of Slack, and deletions erase."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from chanctx.bot.cli import main
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore, store_events
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.slack.envelope import STORE_FAILED
from chanctx.bot.slack.intake import Ignore
from chanctx.cache.channel_store import (
    ChannelForgotten,
    ChannelNamed,
    FileDeleted,
    SqliteChannelStore,
    UserNamed,
)

from tests.support.slack_events import (
    CHANNEL,
    STATE,
    TEAM,
    edit,
    envelope,
    mention_pair,
    message,
    ts,
)


def bot_on(data: Path) -> OfflineBot:
    return OfflineBot(copy.deepcopy(STATE), data_dir=data, channel_store=True)


def deleted(at: str, when: str) -> dict[str, object]:
    return {
        "type": "message", "subtype": "message_deleted", "channel": CHANNEL, "deleted_ts": at,
        "hidden": True, "event_ts": when, "ts": when, "channel_type": "channel",
    }  # fmt: skip


def raw_files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_a_restart_reads_the_channel_threads_and_names_from_the_store(tmp_path: Path) -> None:
    with bot_on(tmp_path) as bot:
        bot.dispatch(envelope(message(ts(1), "the vault code is 7781")))
        bot.dispatch(envelope(message(ts(2), "who broke the nightly build?")))
        for n in (3, 4):
            bot.dispatch(envelope(message(ts(n), f"not me {n}", thread_ts=ts(2))))
        for event in mention_pair(ts(10), "what is the vault code?"):
            bot.dispatch(event)
        first = bot.slack.call_counts()
    assert first["conversations.history"] == 1  # the channel was never loaded before
    with bot_on(tmp_path) as bot:
        for event in mention_pair(ts(20), "who broke it?", thread_ts=ts(2)):
            bot.dispatch(event)
        calls = bot.slack.call_counts()
        (result,) = bot.runtime.runner.results
        assert result.context is not None and result.context.thread is not None
        replies = [r.text for r in result.context.thread.replies]
        assert "not me 3" in replies and "not me 4" in replies
        assert bot.engine.message(CHANNEL, ts(1)) is not None  # the early message is back
    for method in ("conversations.history", "conversations.replies", "users.info"):
        assert method not in calls, calls


def test_deleted_and_edited_away_text_leaves_every_file(tmp_path: Path) -> None:
    with bot_on(tmp_path) as bot:
        gone = message(ts(1), "secret passphrase tangerine4471")
        changed = message(ts(2), "meet at pier 39 marmalade")
        bot.dispatch(envelope(gone))
        bot.dispatch(envelope(changed))
        assert b"tangerine4471" in raw_files(tmp_path)
        bot.dispatch(envelope(deleted(ts(1), ts(3))))
        bot.dispatch(envelope(edit(ts(4), changed, "meet at pier 40")))
        assert bot.engine.message(CHANNEL, ts(1)) is None
        on_disk = raw_files(tmp_path)
        assert b"tangerine4471" not in on_disk and b"marmalade" not in on_disk
        assert b"pier 40" in on_disk


def test_a_deleted_channel_is_erased_from_the_store_and_the_caches(tmp_path: Path) -> None:
    with bot_on(tmp_path) as bot:
        bot.dispatch(envelope(message(ts(1), "quarterly numbers cobalt5521")))
        bot.dispatch(envelope({"type": "channel_deleted", "channel": CHANNEL, "event_ts": ts(2)}))
        assert bot.engine.held(CHANNEL) == 0
        assert b"cobalt5521" not in raw_files(tmp_path)


def test_a_store_that_cannot_write_refuses_the_event_and_lets_its_retry_through(
    tmp_path: Path,
) -> None:
    with bot_on(tmp_path / "bot") as bot:
        record = bot.engine.record
        assert record is not None
        SqliteChannelStore(tmp_path / "full").close()  # the schema, then not a page more
        pages = (tmp_path / "full" / "channels.sqlite3").stat().st_size // 4096
        full = OpenStore(SqliteChannelStore(tmp_path / "full", page_limit=pages))
        bot.engine.record = ChannelRecord(full, TEAM)
        sent = envelope(message(ts(1), "a message the disk cannot take"), event_id="Ev0FULL001")
        response = bot.dispatch(sent)
        assert response.status == STORE_FAILED
        assert full.problem is not None and "full" in full.problem
        assert bot.engine.message(CHANNEL, ts(1)) is None  # not stored, not in the caches
        bot.engine.record = record  # space again: Slack's retry of the same event gets in
        assert bot.dispatch(sent).status == 200
        assert record.store.get(TEAM, CHANNEL, ts(1)) is not None
        full.close()


def test_events_intake_ignores_still_reach_the_store_when_they_erase_or_name() -> None:
    cases = {
        "channel_deleted": ({"type": "channel_deleted", "channel": "C1"}, ChannelForgotten),
        "group_deleted": ({"type": "group_deleted", "channel": "G1"}, ChannelForgotten),
        "file_deleted": ({"type": "file_deleted", "file_id": "F1"}, FileDeleted),
        "channel_rename": (
            {"type": "channel_rename", "channel": {"id": "C1", "name": "ops"}},
            ChannelNamed,
        ),
        "user_change": (
            {"type": "user_change", "user": {"id": "U1", "profile": {"display_name": "Sam"}}},
            UserNamed,
        ),
    }
    for kind, (event, wanted) in cases.items():
        (found,) = store_events(TEAM, Ignore(kind), event)
        assert isinstance(found, wanted) and found.team == TEAM, kind
    assert store_events(TEAM, Ignore("x"), {"type": "channel_rename", "channel": "C1"}) == []


def test_a_store_that_cannot_open_stops_the_start_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {
        "SLACK_BOT_TOKEN": "xoxb-store-test",
        "SLACK_SIGNING_SECRET": "0" * 32,
        "ANTHROPIC_API_KEY": "sk-ant-store-test",
        "SLACK_API_URL": "http://127.0.0.1:9/api/",  # never reached: the store stops it first
    }
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "channels.sqlite3").write_bytes(b"not a database, " * 512)
    held = tmp_path / "held"
    holder = SqliteChannelStore(held)  # another process's store, as far as flock can tell
    try:
        for data, words in ((corrupt, "check it with"), (held, "another chanctx process")):
            assert main(["run", "--http", "--data-dir", str(data)], env=env) == 2
            err = capsys.readouterr().err.strip()
            assert err.startswith("chanctx: ") and len(err.splitlines()) == 1, err
            assert f"{data}/channels." in err and words in err, err
    finally:
        holder.close()


def test_chanctx_query_ranks_everything_stored_beside_the_running_bot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = copy.deepcopy(STATE)
    with OfflineBot(state, data_dir=tmp_path, channel_store=True, history_per_channel=50) as bot:
        bot.dispatch(envelope(message(ts(1), "the vault code is 7781 since the audit")))
        for n in range(2, 200):
            bot.dispatch(envelope(message(ts(n), f"standup note {n}: nothing blocked")))
        assert bot.engine.history.get(CHANNEL, ts(1)) is None  # the cache holds the newest 50
        argv = ["query", CHANNEL, "what is the vault code?", "--data-dir", str(tmp_path)]
        assert main([*argv, "--format", "text"]) == 0  # the bot still holds the store
        assert "7781" in capsys.readouterr().out
    assert main(["query", "C0NOWHERE1", "vault", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "C0NOWHERE1 is not in the channel store" in err and len(err.splitlines()) == 1
