"""The attachment manifest: dedup by id and by content, per-thread re-attachment, persistence."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from chanctx.manifest_store import (
    ATTACHMENT_MANIFEST,
    AttachmentManifest,
    AttachmentRecord,
    CompactionEntry,
    CustomEntry,
    MessageEntry,
    SessionLog,
    content_hash,
    reattach_preamble,
    rebuild,
)
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

THREAD = "1760000000.000100"
OTHER_THREAD = "1760000500.000100"
GRAPH = b"\x89PNG\r\n\x1a\n graph bytes"
NOTES = b"meeting notes"


def record(
    artifact_id: str,
    data: bytes = GRAPH,
    *,
    thread: str | None = THREAD,
    turn: int = 1,
    name: str = "graph.png",
) -> AttachmentRecord:
    return AttachmentRecord(
        artifact_id=artifact_id,
        display_name=name,
        media_type="image/png",
        content_hash=content_hash(data),
        source_message_id=f"17600000{turn:02d}.000200",
        source_thread_id=thread,
        included_at_turn=turn,
    )


def test_content_hash_is_sha256_hex() -> None:
    assert content_hash(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_find_by_exact_id_first_then_by_content_hash() -> None:
    manifest = AttachmentManifest()
    original = record("F1")
    manifest.add(original)
    manifest.add(record("F2", NOTES, name="notes.txt"))

    assert manifest.find("F1", content_hash(GRAPH)) == original
    # The id wins even when the bytes asked about differ (an id names immutable content).
    assert manifest.find("F1", content_hash(b"other")) == original
    # A re-upload: new id, same bytes -> the record of what was already sent.
    assert manifest.find("F9", content_hash(GRAPH)) == original
    assert manifest.find("F9", content_hash(b"never sent")) is None
    assert manifest.find("F9") is None  # without the bytes only the id can match
    assert manifest.find("F1") == original


def test_add_replaces_a_record_under_the_same_id_and_keeps_the_hash_index_right() -> None:
    manifest = AttachmentManifest([record("F1"), record("F2", GRAPH, turn=2)])
    manifest.add(record("F1", NOTES, turn=3))
    assert len(manifest) == 2
    assert manifest.find("F1") == record("F1", NOTES, turn=3)
    # GRAPH is still known, through F2 now.
    found = manifest.find("F7", content_hash(GRAPH))
    assert found is not None and found.artifact_id == "F2"
    manifest.add(record("F2", b"third", turn=4))
    assert manifest.find("F7", content_hash(GRAPH)) is None


def test_for_thread_returns_only_the_current_threads_media_oldest_first() -> None:
    manifest = AttachmentManifest()
    manifest.add(record("F3", b"c", turn=3))
    manifest.add(record("F1", b"a", turn=1))  # the root's own file: thread id = root ts
    manifest.add(record("FX", b"x", thread=OTHER_THREAD, turn=2))
    manifest.add(record("FT", b"t", thread=None, turn=2))  # a top-level channel message
    manifest.add(record("F2", b"b", turn=3))

    ids = [r.artifact_id for r in manifest.for_thread(THREAD)]
    assert ids == ["F1", "F3", "F2"]  # by turn; one turn's records in the order added
    assert [r.artifact_id for r in manifest.for_thread(OTHER_THREAD)] == ["FX"]
    assert manifest.for_thread("1760009999.000000") == []


def test_reference_and_preamble_texts() -> None:
    assert record("F1", turn=4).reference() == (
        "[file graph.png (image/png) was already attached at turn 4; it is not repeated here]"
    )
    assert reattach_preamble(2) == (
        "[Post-compaction context recovery: re-attaching 2 media items from this thread]"
    )


def test_records_are_validated() -> None:
    with pytest.raises(ValidationError):
        AttachmentRecord(
            artifact_id="F1",
            display_name="x",
            media_type="image/png",
            content_hash="not-a-sha256",
            source_message_id="1.2",
            included_at_turn=1,
        )
    with pytest.raises(ValidationError):
        record("F1", turn=-1)


records = st.builds(
    record,
    st.text("F0123456789", min_size=2, max_size=4),
    st.binary(max_size=8),
    thread=st.sampled_from([THREAD, OTHER_THREAD, None]),
    turn=st.integers(0, 50),
    name=st.text(max_size=20),
)


@given(st.lists(records, max_size=12))
def test_to_data_from_data_round_trip(items: list[AttachmentRecord]) -> None:
    manifest = AttachmentManifest(items)
    back = AttachmentManifest.from_data(manifest.to_data())
    assert back == manifest
    assert back.entries == manifest.entries
    assert list(back.entries) == list(manifest.entries)  # insertion order survives too


def test_persisted_through_the_session_log_and_rebuilt(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session.jsonl")
    manifest = AttachmentManifest()
    manifest.add(record("F1", turn=1))
    log.append(MessageEntry(at=1.0, role="user", content="look at this", turn=1))
    log.append(manifest.to_entry(at=1.5))
    log.append(MessageEntry(at=2.0, role="assistant", content="a graph", turn=1))
    manifest.add(record("F2", NOTES, thread=OTHER_THREAD, turn=2, name="notes.txt"))
    log.append(CustomEntry(at=3.0, custom_type=ATTACHMENT_MANIFEST, data=manifest.to_data()))

    # A restarted bot: a fresh reader of the same file.
    state = rebuild(SessionLog(log.path).entries())
    resumed = AttachmentManifest.from_data(state.custom[ATTACHMENT_MANIFEST])
    assert resumed == manifest  # the latest manifest entry wins
    assert AttachmentManifest.from_state(state) == manifest
    assert resumed.find("F8", content_hash(NOTES)) == manifest.find("F2")


def test_after_a_compaction_the_threads_media_is_what_to_reattach(tmp_path: Path) -> None:
    log = SessionLog(tmp_path / "session.jsonl")
    manifest = AttachmentManifest([record("F1", turn=1), record("FX", thread=OTHER_THREAD)])
    log.append(MessageEntry(at=1.0, role="user", content="q", turn=1))
    log.append(manifest.to_entry(at=1.1))
    log.append(MessageEntry(at=2.0, role="assistant", content="a", turn=1))
    log.append(
        CompactionEntry(
            at=3.0,
            strategy="trim",
            digest="earlier talk",
            replaced_through_turn=1,
            tokens_before=100,
            tokens_after=10,
        )
    )
    state = rebuild(log.entries())
    assert state.post_compaction
    again = AttachmentManifest.from_state(state).for_thread(THREAD)
    assert [r.artifact_id for r in again] == ["F1"]


def test_a_session_without_a_manifest_starts_empty(tmp_path: Path) -> None:
    state = rebuild(SessionLog(tmp_path / "none.jsonl").entries())
    assert len(AttachmentManifest.from_state(state)) == 0


def test_from_data_skips_bad_records_instead_of_failing_the_resume(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = record("F1")
    data = {
        "version": 1,
        "entries": {"F1": good.model_dump(mode="json"), "F2": {"artifact_id": "F2"}},
    }
    with caplog.at_level(logging.WARNING, logger="chanctx.manifest_store"):
        manifest = AttachmentManifest.from_data(data)
    assert manifest.records() == [good]
    assert "'F2' skipped" in caplog.text
    assert len(AttachmentManifest.from_data({"version": 99, "entries": {}})) == 0
    assert len(AttachmentManifest.from_data({"entries": "nonsense"})) == 0
    assert len(AttachmentManifest.from_data({})) == 0
