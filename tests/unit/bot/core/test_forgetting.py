"""What a forget covers, read from the store before anything is erased, and which live changes
take text away (a deletion, an edit that replaces the words; not an edit that adds some)."""

from __future__ import annotations

from pathlib import Path

from chanctx.bot.core.forget_request import ForgetRequest, parse_link
from chanctx.bot.core.forgetting import Forgetting, RedactingStore, plan_erasure
from chanctx.cache.channel_store import (
    ChannelForgotten,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    SqliteChannelStore,
    UserForgotten,
    UserNamed,
)
from chanctx.context import Message
from chanctx.manifest_store import MessageEntry, SessionKey, SessionStore


def posted(team: str, channel: str, ts: str, text: str, user: str) -> MessagePosted:
    return MessagePosted(team, Message(channel=channel, ts=ts, text=text, user_id=user))


def test_a_plan_reaches_every_team_that_has_it(tmp_path: Path) -> None:
    with SqliteChannelStore(tmp_path) as store:
        store.write(
            [
                posted("T1", "C1", "1.000100", "alpha secret text", "U9"),
                posted("T2", "C1", "2.000100", "beta secret text", "U9"),
                posted("T2", "C2", "3.000100", "gamma kept text", "U1"),
                UserNamed("T2", "U9", "mallory"),
            ]
        )
        by_user = plan_erasure(store, ForgetRequest(user="U9"))
        assert by_user.events == [UserForgotten("T1", "U9"), UserForgotten("T2", "U9")]
        assert sorted(by_user.texts) == ["alpha secret text", "beta secret text", "mallory"]
        assert (by_user.messages, by_user.teams) == (2, ["T1", "T2"])
        only = plan_erasure(store, ForgetRequest(user="U9", team="T1"))
        assert only.texts == ["alpha secret text"]
        channel = plan_erasure(store, ForgetRequest(channel="C2"))
        assert channel.events == [ChannelForgotten("T2", "C2")]
        assert channel.dropped == {("T2", "C2"): ["3.000100"]}
        gone = plan_erasure(store, ForgetRequest(channel="C1", ts="9.000100", team="T1"))
        assert gone.events == [MessageDeleted("T1", "C1", "9.000100")]  # tombstoned anyway
        assert (gone.messages, gone.teams) == (0, [])
        assert plan_erasure(store, ForgetRequest(channel="C9")).events == []


def test_live_changes_hand_over_the_text_they_take_away(tmp_path: Path) -> None:
    handed: list[list[str]] = []
    opened = RedactingStore(SqliteChannelStore(tmp_path))
    opened.on_erased = handed.append
    try:
        opened.write([posted("T1", "C1", f"{n}.000100", f"message number {n}", "U1")
                      for n in range(1, 5)])  # fmt: skip
        opened.write([MessageEdited("T1", "C1", "1.000100", "message number 1 (fixed)", "10.0")])
        opened.write([MessageEdited("T1", "C1", "2.000100", "something else", "11.0")])
        opened.write([MessageDeleted("T1", "C1", "3.000100")])
        opened.write([MessageDeleted("T1", "C1", "3.000100")])  # nothing left to take
        opened.write([ChannelForgotten("T1", "C1")])
    finally:
        opened.close()
    assert handed == [
        ["message number 2"],
        ["message number 3"],
        ["message number 1 (fixed)", "something else", "message number 4"],
    ]


def test_links() -> None:
    assert parse_link("https://x.slack.com/archives/C123/p1700000000000100") == (
        "C123",
        "1700000000.000100",
    )
    assert parse_link(" C123:1700000000.000100 ") == ("C123", "1700000000.000100")


def test_retention_expires_idle_session_logs(tmp_path: Path) -> None:
    sessions = SessionStore(tmp_path)
    key = SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100")
    sessions.open(key).append(MessageEntry(at=1.0, role="user", content="old question", turn=1))
    opened = RedactingStore(SqliteChannelStore(tmp_path))
    forgetting = Forgetting(opened, tmp_path, drop_cached=lambda *_: None, owners=[sessions])
    try:
        written = (sessions.directory / key.file_name).stat().st_mtime
        assert forgetting.expire(30, now=written + 29 * 86_400) == 0
        assert forgetting.expire(30, now=written + 31 * 86_400) == 1
        assert sessions.keys() == []
    finally:
        forgetting.close()
        opened.close()
