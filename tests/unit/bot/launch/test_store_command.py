"""``chanctx store stats``: what the channel store holds, read through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chanctx.bot.cli import main

from tests.support.paths import DATA

REAL = DATA / "slack_export" / "hfaran-slack-export-viewer-testarchive.zip"


def test_stats_after_an_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    assert main(["import", str(REAL), "--data-dir", data], env={}) == 0
    capsys.readouterr()
    assert main(["store", "stats", "--data-dir", data], env={}) == 0
    text = capsys.readouterr().out
    assert "2 channels, 146 messages, 0 threads, 0 tombstones" in text
    assert (
        "C0JGLMMNX #enrique: 96 messages, 0 threads, 0 tombstones, 2016-01-15 to 2016-03-29" in text
    )
    assert main(["store", "check", "--data-dir", data], env={}) == 0
    assert "schema version 3, 0 problem(s)" in capsys.readouterr().out
    assert main(["store", "stats", "--json"], env={"CHANCTX_DATA_DIR": data}) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["messages"] == 146 and stats["bytes_on_disk"] > 0
    assert {c["name"]: c["messages"] for c in stats["per_channel"]} == {
        "enrique": 96, "traveling-sailor": 50
    }  # fmt: skip


def test_a_data_dir_without_a_store_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "stats", "--data-dir", str(tmp_path)], env={}) == 2
    assert f"no channel store in {tmp_path} yet" in capsys.readouterr().err


def test_stats_say_how_far_back_each_channel_reaches_and_what_the_backfill_still_wants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chanctx.cache.channel_store import (
        BackfillCursor,
        CursorSaved,
        MessagePosted,
        SqliteChannelStore,
    )
    from chanctx.context import Message

    day = 86_400.0
    start = 1_780_000_000.0  # 2026-05-28
    cursors = {
        "C1": None,
        "C2": BackfillCursor(oldest_ts=f"{start + 9 * day:.6f}", goal_ts=f"{start:.6f}"),
        "C3": BackfillCursor(oldest_ts=f"{start:.6f}", goal_ts=f"{start:.6f}"),
        "C4": BackfillCursor(oldest_ts=f"{start:.6f}", complete=True),
    }
    store = SqliteChannelStore(tmp_path)
    for channel, cursor in cursors.items():
        posted = MessagePosted(
            "T1", Message(channel=channel, ts=f"{start + 10 * day:.6f}", text="hi")
        )
        store.write([posted] + ([CursorSaved("T1", channel, "history", cursor)] if cursor else []))
    store.close()
    assert main(["store", "stats", "--data-dir", str(tmp_path)], env={}) == 0
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["C1"].endswith("history from Slack: not read yet (backfill pending)")
    assert lines["C2"].endswith(
        "history from Slack: back to 2026-06-06 (backfill pending, to 2026-05-28)"
    )
    assert lines["C3"].endswith(
        "history from Slack: back to 2026-05-28 (backfill done to 2026-05-28)"
    )
    assert lines["C4"].endswith("history from Slack: whole (backfill complete)")
