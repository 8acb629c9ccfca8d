"""The bulk import stores what live intake would: the benchmark's generated export (plain
messages, replies, thread roots, edits, reactions, bots, file shares, joins, non-ASCII text)
imported by ``import_export`` and, message by message, through intake and ``store.write``
gives the same messages, read back in order, the same file records, and the same full-text
candidates, scores included (the same documents under the same row ids in the same
shards)."""

from __future__ import annotations

from pathlib import Path

import pytest
from chanctx.bot.export import ExportMessage, open_source, read_export
from chanctx.bot.export.importer import import_export
from chanctx.bot.slack.intake import Record, SelfIdentity, intake
from chanctx.cache.channel_store import (
    Candidate,
    FileShared,
    MessagePosted,
    SqliteChannelStore,
    StoreEvent,
)
from chanctx.context import Message

from bench._import_data import TEAM, write_export

TERMS = (["deploy"], ["checkout", "latency"], ["merci"], ["rollback", "502"], ["the"], ["plan"])


def per_event(export: Path, store: SqliteChannelStore) -> None:
    """Every exported message through live intake, written in batches of 500 with the
    records of the files it shares."""
    source = open_source(export)
    me, batch = SelfIdentity(), list[StoreEvent]()
    try:
        for record in read_export(source):
            if not isinstance(record, ExportMessage):
                continue
            raw = dict(record.message, channel=record.channel.id)
            raw.setdefault("type", "message")
            action = intake(raw, me)
            if isinstance(action, Record):
                message = action.message
                batch.append(MessagePosted(TEAM, message))
                batch += (FileShared(TEAM, f, message.channel, message.ts) for f in message.files)
            if len(batch) >= 500:
                store.write(batch)
                batch.clear()
        store.write(batch)
    finally:
        source.close()


Held = dict[str, tuple[list[Message], list[list[Candidate]]]]


def held(store: SqliteChannelStore) -> Held:
    out: Held = {}
    for key in sorted(store.channels(TEAM), key=lambda k: k.channel):
        messages = [m for part in store.iter_messages(TEAM, key.channel) for m in part]
        found = [store.search_candidates(TEAM, key.channel, terms, 50) for terms in TERMS]
        out[key.channel] = (messages, found)
    return out


@pytest.mark.slow
def test_an_import_stores_what_live_intake_stores(tmp_path: Path) -> None:
    export = tmp_path / "export.zip"
    write_export(export, 6_000)
    with SqliteChannelStore(tmp_path / "bulk") as bulk, SqliteChannelStore(tmp_path / "one") as one:
        summary = import_export(export, bulk, on_problem=lambda line: None, parallel=False)
        per_event(export, one)
        imported, expected = held(bulk), held(one)
    assert summary.imported > 5_000 and summary.refused == 0
    assert imported.keys() == expected.keys()
    messages = [m for ms, _ in expected.values() for m in ms]
    replies = [m for m in messages if m.thread_ts not in (None, m.ts)]
    assert len(replies) > 500  # the fast path for a person's reply was taken many times
    for channel in expected:
        assert imported[channel] == expected[channel], channel
    assert sum(len(c) for _, found in expected.values() for c in found) > 100
    shared = {f.artifact_id for m in messages for f in m.files}
    assert len(shared) > 50  # file shares, read without intake since
    with SqliteChannelStore(tmp_path / "bulk") as bulk, SqliteChannelStore(tmp_path / "one") as one:
        for file_id in sorted(shared):
            assert bulk.file(TEAM, file_id) == one.file(TEAM, file_id) is not None
