"""The durable session log: keys, round trips, crash tails, corruption, fsync, threads, rebuild."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

import pytest
from chanctx.context import ChanctxError
from chanctx.manifest_store import (
    ATTACHMENT_MANIFEST,
    CompactionEntry,
    CustomEntry,
    Entry,
    InvalidSessionKey,
    MessageEntry,
    SessionKey,
    SessionLog,
    SessionStarted,
    SessionStore,
    rebuild,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.manifest_store.test_compaction import assert_valid, conversations, flat, log_of

Role = Literal["user", "assistant"]
KEY = SessionKey(team="T1", channel="C1", thread_ts="1760000000.000100")
START = SessionStarted(
    at=1.0, session_id="s-1", model="claude-sonnet-5", team="T1", channel="C1", thread_ts="1.2"
)


def message(turn: int, role: Role = "user", text: str = "hello") -> MessageEntry:
    return MessageEntry(
        at=float(turn), role=role, content=[{"type": "text", "text": text}], turn=turn
    )


# --- SessionKey -----------------------------------------------------------------------------------


def test_a_key_names_one_file_and_reads_back_from_it() -> None:
    assert KEY.file_name == "T1_C1_1760000000.000100.jsonl"
    assert SessionKey.from_file_name(KEY.file_name) == KEY
    assert SessionKey.from_file_name("T1_C1_1760000000.000100.jsonl.torn") is None
    assert SessionKey.from_file_name("notes.txt") is None


@pytest.mark.parametrize(
    ("team", "channel", "thread_ts", "bad"),
    [
        ("T1", "../x", "1.2", "channel"),
        ("T1", "C1/../../etc", "1.2", "channel"),
        ("..", "C1", "1.2", "team"),
        ("t1", "C1", "1.2", "team"),
        ("", "C1", "1.2", "team"),
        ("T1", "C1", "1.2/../../x", "thread_ts"),
        ("T1", "C1", "1.2.3", "thread_ts"),
        ("T1", "C1", "abc", "thread_ts"),
        ("T1", "C1", "", "thread_ts"),
        ("T1", "C1", "١٢.٣", "thread_ts"),  # non-ASCII digits
        ("T1", "C1\n", "1.2", "channel"),
    ],
)
def test_a_key_rejects_anything_that_is_not_a_slack_id_or_ts(
    team: str, channel: str, thread_ts: str, bad: str
) -> None:
    with pytest.raises(InvalidSessionKey, match=f"SessionKey.{bad} ") as caught:
        SessionKey(team=team, channel=channel, thread_ts=thread_ts)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, ChanctxError)
    assert caught.value.part == bad


# --- round trip -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
blocks = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
times = st.floats(0, 2e9)
entries = st.one_of(
    st.builds(
        SessionStarted,
        at=times,
        session_id=st.text(),
        model=st.text(),
        team=st.text(),
        channel=st.text(),
        thread_ts=st.text(),
    ),
    st.builds(
        MessageEntry,
        at=times,
        role=st.sampled_from(["user", "assistant"]),
        content=st.text() | st.lists(blocks, max_size=3),
        turn=st.integers(1, 10**6),
        usage=st.none() | st.dictionaries(st.text(max_size=8), st.integers(0, 10**6)),
    ),
    st.builds(
        CustomEntry,
        at=times,
        custom_type=st.text(min_size=1),
        data=st.dictionaries(st.text(), json_values),
    ),
    st.builds(
        CompactionEntry,
        at=times,
        strategy=st.sampled_from(["trim", "summarize"]),
        digest=st.text(),
        replaced_through_turn=st.integers(0, 10**6),
        tokens_before=st.integers(0, 10**7),
        tokens_after=st.integers(0, 10**7),
    ),
)


@settings(max_examples=40, deadline=None)
@given(written=st.lists(entries, max_size=8))
def test_entries_read_back_equal_to_what_was_appended(written: list[Entry]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        log = SessionStore(Path(directory)).open(KEY)
        for entry in written:
            log.append(entry)
        assert log.entries() == written
        assert SessionLog(log.path).entries() == written  # a fresh reader, as after a restart


def test_a_session_that_was_never_written_has_no_file_and_no_entries(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "data")
    log = store.open(KEY)
    assert log.entries() == [] and not store.exists(KEY) and store.keys() == []
    log.append(START)
    assert store.exists(KEY) and log.path.parent == tmp_path / "data" / "sessions"


def test_a_restarted_store_finds_every_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    keys = [KEY, SessionKey("T1", "D42", "1760000001.000200"), SessionKey("E9", "C1", "7")]
    for key in keys:
        store.open(key).append(START)
    assert store.open(KEY) is store.open(KEY)
    (store.directory / "README.txt").write_text("not a session")
    assert SessionStore(tmp_path).keys() == sorted(keys)


# --- crashes and corruption ------------------------------------------------------------------------


def test_a_torn_last_line_is_skipped_with_one_warning_and_the_next_append_is_clean(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = SessionStore(tmp_path).open(KEY)
    log.append(START)
    log.append(message(1))
    size = log.path.stat().st_size
    torn = message(2).model_dump_json().encode()[:25]
    with open(log.path, "ab") as file:  # a crash mid-write
        file.write(torn)

    with caplog.at_level(logging.WARNING):
        assert log.entries() == [START, message(1)]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert str(log.path) in warnings[0].getMessage() and f"byte {size}" in warnings[0].getMessage()

    caplog.clear()
    restarted = SessionStore(tmp_path).open(KEY)  # a new process knows nothing of the tear
    with caplog.at_level(logging.WARNING):
        restarted.append(message(2, "assistant", "answer"))
        assert restarted.entries() == [START, message(1), message(2, "assistant", "answer")]
    assert [r.getMessage() for r in caplog.records if "moved to" in r.getMessage()]
    assert log.path.read_bytes().endswith(b"\n")
    sidecar = log.path.with_name(log.path.name + ".torn").read_text()
    assert f'"offset": {size}' in sidecar  # the torn bytes are kept aside, not thrown away


def test_a_whole_last_entry_missing_only_its_newline_is_kept(tmp_path: Path) -> None:
    log = SessionStore(tmp_path).open(KEY)
    log.append(START)
    with open(log.path, "ab") as file:
        file.write(message(1).model_dump_json().encode())
    assert log.entries() == [START, message(1)]
    SessionLog(log.path).append(message(1, "assistant"))
    assert log.entries() == [START, message(1), message(1, "assistant")]


def test_a_garbled_last_line_with_its_newline_is_a_tear_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = SessionStore(tmp_path).open(KEY)
    log.append(START)
    with open(log.path, "ab") as file:
        file.write(b"\x00\x00\x00\n")  # a zero-filled block after a crash
    with caplog.at_level(logging.WARNING):
        assert log.entries() == [START]
    SessionLog(log.path).append(message(1))
    assert log.entries() == [START, message(1)]


def test_a_corrupt_line_in_the_middle_is_skipped_with_one_warning_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = SessionStore(tmp_path).open(KEY)
    log.append(START)
    log.append(message(1))
    lines = log.path.read_bytes().split(b"\n")
    lines.insert(1, b'{"type": "message", "role": "nobody"}')
    log.path.write_bytes(b"\n".join(lines))
    before = log.path.read_bytes()
    with caplog.at_level(logging.WARNING):
        assert log.entries() == [START, message(1)]  # everything else recovered
    (warning,) = [r.getMessage() for r in caplog.records]
    assert f"{log.path}: line 2 skipped" in warning
    assert log.path.read_bytes() == before  # nothing rewritten
    log.append(message(2))  # and the session goes on
    assert SessionLog(log.path).entries()[-1] == message(2)


# --- durability and concurrency --------------------------------------------------------------------


def test_every_append_is_fsynced_and_a_new_file_also_fsyncs_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    log = SessionStore(tmp_path).open(KEY)
    log.append(START)
    assert synced.count("file") == 1 and synced.count("dir") >= 1
    synced.clear()
    log.append(message(1))
    assert synced == ["file"]


def test_appends_from_many_threads_stay_whole_lines(tmp_path: Path) -> None:
    log = SessionStore(tmp_path).open(KEY)
    big = "x" * 20_000  # bigger than one buffer: a torn interleaving would show

    def worker(index: int) -> None:
        for turn in range(1, 26):
            log.append(
                CustomEntry(at=float(turn), custom_type=f"w{index}", data={"n": turn, "pad": big})
            )

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    read = log.entries()
    assert len(read) == 200
    for index in range(8):
        mine = [e for e in read if isinstance(e, CustomEntry) and e.custom_type == f"w{index}"]
        assert [e.data["n"] for e in mine] == list(range(1, 26))  # each thread's order kept


# --- rebuild --------------------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(conversation=conversations())
def test_a_healthy_log_rebuilds_exactly_the_messages_sent(conversation: Any) -> None:
    manifest = {"entries": {"F1": {"artifact_id": "F1", "included_at_turn": 1}}}
    entries: list[Entry] = [
        START,
        *log_of(conversation),
        CustomEntry(at=2.0, custom_type=ATTACHMENT_MANIFEST, data={"entries": {}}),
        CustomEntry(at=3.0, custom_type=ATTACHMENT_MANIFEST, data=manifest),
    ]
    state = rebuild(entries)
    assert state.messages == flat(conversation)
    assert state.turn == len(conversation) and state.exchange_turns == list(
        range(1, state.turn + 1)
    )
    assert state.custom == {ATTACHMENT_MANIFEST: manifest}  # the latest manifest wins
    assert state.session_id == "s-1" and state.model == "claude-sonnet-5"
    assert state.compactions == 0 and state.last_compaction_turn is None
    assert state.context_attached_turn is None


# Arbitrary, possibly broken logs: a crash can stop a turn anywhere.
ids = st.sampled_from(["a", "b", "c"])
broken_blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, st.sampled_from(["hi", "ok."])),
    st.builds(lambda i: {"type": "tool_use", "id": i, "name": "f", "input": {}}, ids),
    st.builds(lambda i: {"type": "tool_result", "tool_use_id": i, "content": "r"}, ids),
)


@st.composite
def broken_logs(draw: st.DrawFn) -> list[Entry]:
    turn, result = 1, list[Entry]()
    for _ in range(draw(st.integers(0, 12))):
        turn += draw(st.integers(0, 1))
        role: Role = draw(st.sampled_from(["user", "assistant"]))
        content = draw(st.text(max_size=3) | st.lists(broken_blocks, max_size=3))
        result.append(MessageEntry(at=1.0, role=role, content=content, turn=turn))
        if draw(st.integers(0, 5)) == 0:
            through = draw(st.integers(0, turn))
            result.append(
                CompactionEntry(
                    at=1.0,
                    strategy="trim",
                    digest=draw(st.text(max_size=5)),
                    replaced_through_turn=through,
                    tokens_before=0,
                    tokens_after=0,
                )
            )
    return result


@settings(max_examples=300, deadline=None)
@given(entries=broken_logs())
def test_whatever_a_crash_left_rebuild_sends_a_valid_conversation(entries: list[Entry]) -> None:
    state = rebuild(entries)
    if state.messages:
        assert_valid(state.messages)
        assert state.messages[-1]["role"] == "assistant"  # the caller appends the next question
    assert state.exchange_turns == sorted(state.exchange_turns)


def test_an_unanswered_question_and_an_unfinished_tool_call_are_closed(tmp_path: Path) -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "channel_messages", "input": {}}
    entries: list[Entry] = [
        message(1, "user", "first?"),  # the bot crashed before answering
        message(2, "user", "second?"),
        MessageEntry(at=3.0, role="assistant", content=[use], turn=2),  # crashed mid-tool
    ]
    state = rebuild(entries)
    assert_valid(state.messages)
    assert [m["role"] for m in state.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    result = state.messages[4]["content"][0]
    assert result["tool_use_id"] == "toolu_1" and result["is_error"] is True
    assert state.exchange_turns == [1, 2]
