"""Each running writer of the data dir redacts its own file under its own lock: the session
log (and says so once, so the session in memory is read again), the turn journal (the pending
turn in memory too) and the playbooks (their state reloaded from the redacted file). Each keeps
working on the new file afterwards, and a restart reads the redacted state."""

from __future__ import annotations

import os
from pathlib import Path

from chanctx.context.playbook import Delta
from chanctx.manifest_store import (
    LocalPlaybookStore,
    MessageEntry,
    SessionKey,
    SessionStore,
    TurnJournal,
)
from chanctx.manifest_store.redaction import MARKER, Redactor

SECRET = "the deploy key is kept in vault path amber-otter-16"


def on_disk(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_a_session_log_is_redacted_and_says_so_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    log = store.open(SessionKey(team="T1", channel="C1", thread_ts="1700000000.000100"))
    log.append(MessageEntry(at=1.0, role="user", content=f"context: {SECRET}", turn=1))
    log.append(MessageEntry(at=2.0, role="assistant", content="noted", turn=1))
    assert not log.changed_elsewhere()
    count = store.redact(Redactor([SECRET]))
    assert (count.files, count.lines) == (1, 1)
    assert log.changed_elsewhere() and not log.changed_elsewhere()
    log.append(MessageEntry(at=3.0, role="user", content="next question", turn=2))
    contents = [e.content for e in log.entries() if isinstance(e, MessageEntry)]
    assert contents == [f"context: {MARKER}", "noted", "next question"]
    assert SECRET.encode() not in on_disk(tmp_path)


def test_the_turn_journal_redacts_pending_turns_and_keeps_journaling(tmp_path: Path) -> None:
    journal = TurnJournal(tmp_path)
    assert journal.enqueue("turn-1", {"text": f"where is {SECRET}?"}, "Ev1")
    journal.write_reply("turn-1", [f"It is {SECRET}."])
    assert journal.redact(Redactor([SECRET])) == 1
    assert journal.outbox()[0].payload == {"text": f"where is {MARKER}?"}
    assert journal.enqueue("turn-2", {"text": "later"}, "Ev2")
    journal.close()
    assert SECRET.encode() not in on_disk(tmp_path)
    again = TurnJournal(tmp_path)
    try:
        assert [t.turn_id for t in again.pending()] == ["turn-2"]
        (answer,) = again.outbox()
        assert (answer.payload, answer.parts) == (
            {"text": f"where is {MARKER}?"},
            (f"It is {MARKER}.",),
        )
        assert again.seen_event("Ev1")
    finally:
        again.close()


def test_the_playbook_is_redacted_and_reloaded(tmp_path: Path) -> None:
    store = LocalPlaybookStore(tmp_path)
    store.apply("C1", [Delta(op="ADD", content=f"Remember: {SECRET}", subject="deploy key")], 1.0)
    store.apply("C1", [Delta(op="ADD", content="Rollbacks go through the release channel")], 2.0)
    count = store.redact(Redactor([SECRET]))
    assert count.files == 1
    contents = sorted(b.content for b in store.bullets("C1"))
    assert contents == [f"Remember: {MARKER}", "Rollbacks go through the release channel"]
    store.apply("C1", [Delta(op="ADD", content="Deploys freeze on Fridays")], 3.0)
    store.close()
    assert SECRET.encode() not in on_disk(tmp_path)
    again = LocalPlaybookStore(tmp_path)
    try:
        assert len(again.bullets("C1")) == 3
    finally:
        again.close()


def test_session_logs_idle_past_the_retention_period_go(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    old, recent = (
        SessionKey(team="T1", channel="C1", thread_ts=f"170000000{n}.000100") for n in (1, 2)
    )
    for key in (old, recent):
        store.open(key).append(MessageEntry(at=1.0, role="user", content=SECRET, turn=1))
    os.utime(store.directory / old.file_name, (1_000_000.0, 1_000_000.0))
    assert store.expire(before=2_000_000.0) == 1
    assert store.keys() == [recent]
