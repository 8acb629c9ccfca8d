"""``chanctx query`` answers from the channel's whole index, as a running bot answers once its
index is built: never from the interim of a build still running."""

from __future__ import annotations

from pathlib import Path

import pytest
from chanctx.bot.cli import main
from chanctx.bot.core.store_index import PAGE
from chanctx.cache.channel_store import SqliteChannelStore, plain_message_row, post_rows

from tests.support.slack_events import CHANNEL, TEAM, ts

QUESTION = 1_000  # the message that asks; the next one answers in none of its words


def _text(n: int) -> str:
    if n == QUESTION:
        return "anyone know a good dentist?"
    if n == QUESTION + 1:
        return "Dr Okafor on 5th street, ask for the morning slot"
    return f"standup note {n}: nothing blocked"


def test_a_channel_of_more_than_a_page_is_answered_from_its_whole_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # More than a page: an answer would not wait for this build. The reply holds none of the
    # question's words, so only the built index ranks it (a neighbour of a match in its
    # conversation); the store's full-text matches, all an interim index holds here, do not.
    count = PAGE + 100
    store = SqliteChannelStore(tmp_path, synchronous="OFF")
    try:
        rows = [plain_message_row(ts(n), "U1", _text(n)) for n in range(count)]
        post_rows(store, TEAM, CHANNEL, rows)
    finally:
        store.close()
    argv = ["query", CHANNEL, "good dentist", "--data-dir", str(tmp_path), "--format", "text"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "good dentist" in out and "Dr Okafor" in out
