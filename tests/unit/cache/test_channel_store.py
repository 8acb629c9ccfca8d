"""The SQLite channel store: idempotency rules, reads, search candidates, names, cursors,
retention, the size bound, stats, group commit and readers beside the writer."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from chanctx.cache.channel_store import (
    SCHEMA_VERSION,
    BackfillCursor,
    ChannelForgotten,
    ChannelNamed,
    CursorSaved,
    FileDeleted,
    FileShared,
    GroupCommitter,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PinChanged,
    SqliteChannelStore,
    UserNamed,
    WriteResult,
)
from chanctx.context import FileRef, InvalidTimestamp, Message

BASE = 1_700_000_000
T = "T1"


def ts(second: int) -> str:
    return f"{BASE + second}.000000"


def msg(second: int, text: str = "", *, channel: str = "C1", **fields: object) -> Message:
    return Message.model_validate(
        {"channel": channel, "ts": ts(second), "user_id": "U1", "text": text or f"m{second}"}
        | fields
    )


def post(*messages: Message, team: str = T) -> list[MessagePosted]:
    return [MessagePosted(team, m) for m in messages]


def disk(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.iterdir() if p.is_file())


@pytest.fixture
def store(tmp_path: Path) -> SqliteChannelStore:
    opened = SqliteChannelStore(tmp_path)
    yield opened  # type: ignore[misc]
    opened.close()


def test_every_exported_name_exists() -> None:
    from chanctx.cache import channel_store

    assert all(hasattr(channel_store, name) for name in channel_store.__all__)


def test_the_same_message_twice_adds_nothing_and_a_tombstone_wins_over_a_copy(
    store: SqliteChannelStore,
) -> None:
    assert store.write(post(msg(1), msg(2))).applied == 2
    assert store.write(post(msg(1), msg(2))) == WriteResult(known=2)
    store.write([MessageDeleted(T, "C1", ts(1))])
    again = store.write(post(msg(1)))  # an export taken before the deletion
    assert again.deleted == 1 and again.applied == 0
    assert store.get(T, "C1", ts(1)) == Message(channel="C1", ts=ts(1), deleted=True)
    # a deletion the store never saw the message of is remembered all the same
    store.write([MessageDeleted(T, "C1", ts(9))])
    assert store.write(post(msg(9))).deleted == 1
    assert [m.ts for m in store.messages(T, "C1")] == [ts(2)]


def test_an_older_copy_never_undoes_an_edit_and_a_newer_one_replaces(
    store: SqliteChannelStore,
) -> None:
    store.write(post(msg(1, "first draft")))
    store.write([MessageEdited(T, "C1", ts(1), "final words", ts(50))])
    older = store.write(post(msg(1, "first draft")))
    assert older.known == 1
    got = store.get(T, "C1", ts(1))
    assert got is not None and got.text == "final words" and got.edited_ts == ts(50)
    stale_edit = store.write([MessageEdited(T, "C1", ts(1), "in between", ts(40))])
    assert stale_edit.known == 1
    newer = store.write(post(msg(1, "later again", edited_ts=ts(60))))
    assert newer.applied == 1
    assert store.get(T, "C1", ts(1)) == msg(1, "later again", edited_ts=ts(60))
    assert store.write([MessageEdited(T, "C1", ts(7), "x", ts(70))]).unknown == 1


def test_an_event_copy_of_a_root_keeps_the_thread_counters_stored(
    store: SqliteChannelStore,
) -> None:
    snapshot = msg(1, thread_ts=ts(1), reply_count=4, latest_reply=ts(9), reply_users=("U2",))
    store.write(post(snapshot))
    store.write(post(msg(1)))  # the same root as an event brings it: no counters
    assert store.get(T, "C1", ts(1)) == snapshot


def test_reads_in_ts_order_newest_n_ranges_timeline_threads(store: SqliteChannelStore) -> None:
    store.write(
        post(
            msg(10, "root", thread_ts=ts(10)),
            msg(11, "r1", thread_ts=ts(10)),
            msg(12, "r2 also sent", thread_ts=ts(10), is_broadcast=True),
            msg(999, "later"),
            msg(100, "middle"),
        )
    )
    seconds = [10, 11, 12, 100, 999]
    assert [m.ts for m in store.messages(T, "C1")] == [ts(s) for s in seconds]
    assert [m.ts for m in store.messages(T, "C1", limit=2)] == [ts(100), ts(999)]
    assert [m.ts for m in store.messages(T, "C1", oldest=ts(11), latest=ts(100))] == [
        ts(11),
        ts(12),
        ts(100),
    ]
    assert [m.text for m in store.messages(T, "C1", scope="timeline")] == [
        "root",
        "r2 also sent",
        "middle",
        "later",
    ]
    assert [m.text for m in store.replies(T, "C1", ts(10))] == ["r1", "r2 also sent"]
    assert [m.ts for m in store.get_many(T, "C1", [ts(999), ts(10), ts(5)])] == [ts(10), ts(999)]
    batches = list(store.iter_messages(T, "C1", batch=2))
    assert [len(b) for b in batches] == [2, 2, 1]
    assert store.messages(T, "C9") == [] and store.get(T, "C9", ts(1)) is None
    with pytest.raises(InvalidTimestamp):
        store.get(T, "C1", "yesterday")


def test_deleting_a_reply_counts_it_out_of_its_root(store: SqliteChannelStore) -> None:
    store.write(post(msg(1, thread_ts=ts(1), reply_count=2), msg(2, thread_ts=ts(1))))
    store.write([MessageDeleted(T, "C1", ts(2))])
    root = store.get(T, "C1", ts(1))
    assert root is not None and root.reply_count == 1
    assert store.replies(T, "C1", ts(1)) == []


def test_every_key_names_the_workspace(store: SqliteChannelStore) -> None:
    store.write(post(msg(1, "from team one")) + post(msg(1, "from team two"), team="T2"))
    store.write([ChannelNamed(T, "C1", "general"), UserNamed("T2", "U1", "Ana")])
    assert store.messages(T, "C1")[0].text == "from team one"
    assert store.messages("T2", "C1")[0].text == "from team two"
    assert store.channel_names(T) == {"C1": "general"} and store.channel_names("T2") == {}
    assert store.user_names("T2") == {"U1": "Ana"} and store.user_names(T) == {}


def test_search_candidates_before_offer_the_best_older_ones(store: SqliteChannelStore) -> None:
    # The best matches (both words) are not older than ``before``: older ones, holding one
    # word, come instead, whether bm25() ranks the few matches or the many are scored from
    # their row ids.
    store.write(post(*(msg(n, "vault combination" if n > 20 else "vault") for n in range(1, 24))))
    terms = ["vault", "combination"]
    best = store.search_candidates(T, "C1", terms, 2)
    assert {c.ts for c in best} <= {ts(21), ts(22), ts(23)}
    for _ in range(2):
        older = store.search_candidates(T, "C1", terms, 2, before=ts(21))
        assert len(older) == 2 and all(c.ts < ts(21) for c in older)
        assert older[0].score >= older[1].score
        store.write(post(*(msg(n, "vault") for n in range(100, 290))))  # then over 200 match


def test_search_candidates_come_best_first_and_survive_any_query_text(
    store: SqliteChannelStore,
) -> None:
    store.write(
        post(
            msg(1, "checkout-api failed after the deploy"),
            msg(2, "lunch anyone?"),
            msg(3, "checkout-api is failing again, checkout-api down"),
            msg(4, "rolled back v2.30.4 (#9931)"),
            msg(5, "graph attached", files=(FileRef(artifact_id="F1", title="grafana latency"),)),
        )
    )
    found = store.search_candidates(T, "C1", ["checkout-api", "fails"], 10)
    assert [c.ts for c in found] == [ts(3), ts(1)]
    assert found[0].score > found[1].score > 0
    older = store.search_candidates(T, "C1", ["checkout-api", "fails"], 10, before=ts(3))
    assert [c.ts for c in older] == [ts(1)]  # the caller holds ts(3) and newer
    assert store.search_candidates(T, "C1", ["checkout-api"], 10, before=ts(1)) == []
    assert [c.ts for c in store.search_candidates(T, "C1", ["v2.30.4"], 5)] == [ts(4)]
    assert [c.ts for c in store.search_candidates(T, "C1", ["9931"], 5)] == [ts(4)]
    assert [c.ts for c in store.search_candidates(T, "C1", ["grafana"], 5)] == [ts(5)]
    for hostile in ['"', "AND", "NEAR(", "*", "col:x", "'", "^", "-", "", "(("]:
        store.search_candidates(T, "C1", [hostile, "lunch"], 5)
    assert [c.ts for c in store.search_candidates(T, "C1", ["checkout"], 1)] == [ts(3)]
    assert store.search_candidates(T, "C9", ["checkout"], 5) == []


def test_pins_files_and_a_deleted_file_leaves_its_message(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path)
    ref = FileRef(artifact_id="F77", filename="secret-roadmap-xq.pdf", title="roadmap")
    store.write(post(msg(1, "see attached", files=(ref,))))
    store.write([FileShared(T, ref, "C1", ts(1)), PinChanged(T, "C1", ts(1), "U2", True)])
    assert store.file(T, "F77") == ref and store.pins(T, "C1") == [ts(1)]
    assert [c.ts for c in store.search_candidates(T, "C1", ["roadmap"], 5)] == [ts(1)]
    store.write([FileDeleted(T, "F77")])
    assert store.file(T, "F77") is None
    kept = store.get(T, "C1", ts(1))
    assert kept is not None and kept.files == () and kept.text == "see attached"
    assert store.search_candidates(T, "C1", ["roadmap"], 5) == []
    store.write([PinChanged(T, "C1", ts(1), "U2", False)])
    assert store.pins(T, "C1") == []
    store.close()
    assert b"secret-roadmap-xq" not in disk(tmp_path)


def test_a_backfill_cursor_commits_with_its_messages_and_survives_a_restart(
    tmp_path: Path,
) -> None:
    store = SqliteChannelStore(tmp_path)
    cursor = BackfillCursor(cursor="dXNlcjpVMDYx", oldest_ts=ts(1), updated=5.0)
    store.write([*post(msg(1), msg(2)), CursorSaved(T, "C1", "history", cursor)])
    store.close()
    store = SqliteChannelStore(tmp_path)
    assert store.cursor(T, "C1") == cursor and store.cursor(T, "C1", "replies:1.0") is None
    assert store.stats().per_channel[0].backfill == cursor
    store.close()


def test_forgetting_a_channel_erases_it_and_refuses_older_copies(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path)
    store.write(post(msg(1, "plan mauvezebra"), msg(5, "more mauvezebra")))
    store.write([ChannelNamed(T, "C1", "secret-project"), ChannelForgotten(T, "C1")])
    assert store.messages(T, "C1") == [] and store.channel_names(T) == {}
    assert store.write(post(msg(3, "from an old export"))).deleted == 1
    assert store.write(post(msg(6, "said after the forget"))).applied == 1
    store.close()
    raw = disk(tmp_path)
    assert b"mauvezebra" not in raw and b"secret-project" not in raw
    assert b"said after the forget" in raw


def test_retention_refuses_old_writes_and_purge_deletes_them_from_disk(tmp_path: Path) -> None:
    now = [float(BASE + 40 * 86_400)]
    store = SqliteChannelStore(tmp_path, retention_days=30, clock=lambda: now[0])
    result = store.write(post(msg(0, "too old"), msg(35 * 86_400, "recent oldword")))
    assert (result.applied, result.expired) == (1, 1)
    now[0] += 26 * 86_400  # 26 days later the second one is past the horizon too
    assert store.purge() == 1
    assert store.messages(T, "C1") == []
    store.close()
    assert b"oldword" not in disk(tmp_path)
    with pytest.raises(ValueError, match="retention_days must be a positive integer, got 0"):
        SqliteChannelStore(tmp_path, retention_days=0)


def test_the_size_bound_drops_the_oldest_first_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = SqliteChannelStore(tmp_path)
    filler = "lorem ipsum dolor sit amet " * 20
    for start in range(0, 3000, 500):
        store.write(
            post(
                *(msg(s, f"{filler} n{s}", channel=f"C{s % 3}") for s in range(start, start + 500))
            )
        )
    before = store.stats()
    bound = before.bytes_on_disk // 2
    with caplog.at_level(logging.WARNING, logger="chanctx.cache.channel_store"):
        dropped = store.enforce_size(bound)
    assert dropped > 0
    assert "over its size bound" in caplog.text and f"dropped the {dropped} oldest" in caplog.text
    kept = sorted(m.ts for c in ("C0", "C1", "C2") for m in store.messages(T, c))
    assert kept == [ts(s) for s in range(dropped, 3000)]  # exactly the oldest went
    store.close()
    assert SqliteChannelStore(tmp_path, read_only=True).bytes_on_disk() < before.bytes_on_disk


def test_stats_count_messages_threads_tombstones_and_bytes(store: SqliteChannelStore) -> None:
    store.write(
        post(msg(1, thread_ts=ts(1)), msg(2, thread_ts=ts(1)), msg(3), msg(4, channel="C2"))
    )
    store.write([MessageDeleted(T, "C1", ts(3)), ChannelNamed(T, "C1", "general")])
    stats = store.stats()
    assert (stats.channels, stats.messages, stats.threads, stats.tombstones) == (2, 3, 1, 1)
    first = stats.per_channel[0]
    assert (first.channel, first.name, first.oldest_ts, first.newest_ts) == (
        "C1",
        "general",
        ts(1),
        ts(2),
    )
    assert stats.bytes_on_disk > 0  # (the PostgreSQL store runs this test too)


def test_stats_say_the_schema_version(store: SqliteChannelStore) -> None:
    assert store.stats().schema_version == SCHEMA_VERSION == 3


def test_a_reader_sees_commits_and_never_blocks_the_writer(tmp_path: Path) -> None:
    writer = SqliteChannelStore(tmp_path)
    writer.write(post(*(msg(s) for s in range(100))))
    reader = SqliteChannelStore(tmp_path, read_only=True)
    pages = reader.iter_messages(T, "C1", batch=10)
    first = next(pages)  # a read in progress
    writer.write(post(msg(500, "written while reading")))
    assert len(first) == 10
    assert reader.messages(T, "C1", limit=1)[0].text == "written while reading"
    reader.close()
    writer.close()


def test_group_commit_acks_each_caller_after_its_batch(store: SqliteChannelStore) -> None:
    committer = GroupCommitter(store)
    results: list[WriteResult] = []
    errors: list[Exception] = []

    def caller(second: int) -> None:
        try:
            results.append(committer.submit(post(msg(second))))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=caller, args=(s,)) for s in range(40)]
    bad = committer.submit_nowait([MessagePosted(T, msg(1).model_copy(update={"ts": "bad"}))])
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    committer.close()
    with pytest.raises(InvalidTimestamp):
        bad.result()
    assert not errors and len(results) == 40
    assert [m.ts for m in store.messages(T, "C1")] == [ts(s) for s in range(40)]
