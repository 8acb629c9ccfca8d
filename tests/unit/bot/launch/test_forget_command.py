"""`chanctx forget` on a stopped bot's data dir: the store erases the messages, every other file
that quoted them is rewritten with the marker, and bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chanctx.bot.cli import main
from chanctx.cache.channel_store import MessagePosted, SqliteChannelStore, UserNamed
from chanctx.context import Message
from chanctx.manifest_store.redaction import MARKER

TEAM, CHANNEL, OTHER = "T1", "C0GENERAL1", "C0RANDOM01"
SECRET_A = "payroll export lives at s3 bucket ivory-kestrel"
SECRET_B = "the staging root password is marigold4471"
KEPT = "lunch is at noon on the terrace today"


def fill(data: Path) -> None:
    with SqliteChannelStore(data) as store:
        store.write(
            [
                MessagePosted(TEAM, Message(channel=CHANNEL, ts="1700000000.000100", text=KEPT,
                                            user_id="U1")),
                MessagePosted(TEAM, Message(channel=CHANNEL, ts="1700000001.000100",
                                            text=SECRET_A, user_id="U9")),
                MessagePosted(TEAM, Message(channel=OTHER, ts="1700000002.000100",
                                            text=SECRET_B, user_id="U9")),
                UserNamed(TEAM, "U9", "mallory"),
            ]
        )  # fmt: skip
    # What a bot wrote while answering: a session log and the turn journal quote the texts.
    (data / "sessions").mkdir()
    quoted = f"[10:00] sam: {KEPT}\n[10:01] mallory: {SECRET_A}\n[10:02] mallory: {SECRET_B}"
    (data / "sessions" / f"{TEAM}_{CHANNEL}_1700000009.000100.jsonl").write_text(
        json.dumps({"type": "message", "message": {"role": "user", "content": quoted}}) + "\n"
    )
    (data / "turns.jsonl").write_text(
        json.dumps({"op": "queued", "payload": {"text": f"what about {SECRET_A}?"}}) + "\n"
    )


def every_byte(data: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(data.rglob("*")) if p.is_file())


def test_forget_user_erases_their_messages_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path)
    assert main(["forget", "--user", "U9", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "user U9: 2 messages erased (team T1)" in out
    assert "2 lines in 2 files of the data dir now say [deleted]" in out
    raw = every_byte(tmp_path)  # the database, its log and shared memory included
    for word in (b"ivory-kestrel", b"marigold4471", b"mallory"):
        assert word not in raw, word
    assert KEPT.encode() in raw and MARKER.encode() in raw
    with SqliteChannelStore(tmp_path, read_only=True) as store:
        assert [m.text for m in store.messages(TEAM, CHANNEL)] == [KEPT]
        assert store.user_names(TEAM) == {}


def test_forget_message_by_permalink(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill(tmp_path)
    link = f"https://acme.slack.com/archives/{OTHER}/p1700000002000100?thread_ts=1&cid={OTHER}"
    assert main(["forget", "--message", link, "--data-dir", str(tmp_path)]) == 0
    assert f"message {OTHER}:1700000002.000100: 1 message erased" in capsys.readouterr().out
    raw = every_byte(tmp_path)
    assert b"marigold4471" not in raw
    assert b"ivory-kestrel" in raw  # the other message is not touched


def test_forget_channel_erases_the_channel_and_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path)
    assert main(["forget", "--channel", CHANNEL, "--data-dir", str(tmp_path), "--team", TEAM]) == 0
    assert f"channel {CHANNEL}: 2 messages erased, 1 channel (team T1)" in capsys.readouterr().out
    raw = every_byte(tmp_path)
    assert b"ivory-kestrel" not in raw and KEPT.encode() not in raw
    with SqliteChannelStore(tmp_path, read_only=True) as store:
        assert store.messages(TEAM, CHANNEL) == []
        assert [m.text for m in store.messages(TEAM, OTHER)] == [SECRET_B]


def test_an_unknown_channel_erases_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path)
    assert main(["forget", "--channel", "C0NOSUCH01", "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().out.strip() == (
        "channel C0NOSUCH01: not in the channel store; 0 messages erased"
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--message", "https://acme.slack.com/messages/C1/p17"], "https://acme.slack.com"),
        (["--message", "C0123:yesterday"], "C0123:yesterday"),
        (["--channel", "general"], "general"),
        (["--user", "u-9"], "u-9"),
        (["--user", "U9", "--timeout", "0"], "--timeout"),
    ],
)
def test_bad_input_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], named: str
) -> None:
    fill(tmp_path)
    assert main(["forget", *args, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("chanctx forget: ") and err.count("\n") == 1, err
    assert named in err


def test_a_data_dir_without_a_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["forget", "--user", "U9", "--data-dir", str(tmp_path)]) == 2
    assert "no channel store in" in capsys.readouterr().err
