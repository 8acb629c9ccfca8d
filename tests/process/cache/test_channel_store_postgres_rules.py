"""The PostgreSQL channel store on a real server: the SQLite store's rule tests run against it
unchanged, then what is its own (erased text gone from the table files, migrations under the
advisory lock, several store objects on one schema, and the database stopped mid-stream)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from chanctx.cache.channel_store import (
    BackfillCursor,
    ChannelForgotten,
    ChannelNamed,
    CursorSaved,
    FileDeleted,
    FileShared,
    MessageDeleted,
    PinChanged,
    PostgresChannelStore,
    StoreTooNew,
    StoreUnavailable,
)
from chanctx.context import FileRef

from tests.support.postgres_server import PostgresServer, pg_schema, postgres
from tests.unit.cache.test_channel_store import (
    BASE,
    T,
    msg,
    post,
    test_an_event_copy_of_a_root_keeps_the_thread_counters_stored,
    test_an_older_copy_never_undoes_an_edit_and_a_newer_one_replaces,
    test_deleting_a_reply_counts_it_out_of_its_root,
    test_every_key_names_the_workspace,
    test_group_commit_acks_each_caller_after_its_batch,
    test_reads_in_ts_order_newest_n_ranges_timeline_threads,
    test_search_candidates_come_best_first_and_survive_any_query_text,
    test_stats_count_messages_threads_tombstones_and_bytes,
    test_the_same_message_twice_adds_nothing_and_a_tombstone_wins_over_a_copy,
    ts,
)

# The SQLite store's rule tests, collected here with this module's ``store`` fixture.
__all__ = [
    "pg_schema",
    "postgres",
    "test_an_event_copy_of_a_root_keeps_the_thread_counters_stored",
    "test_an_older_copy_never_undoes_an_edit_and_a_newer_one_replaces",
    "test_deleting_a_reply_counts_it_out_of_its_root",
    "test_every_key_names_the_workspace",
    "test_group_commit_acks_each_caller_after_its_batch",
    "test_reads_in_ts_order_newest_n_ranges_timeline_threads",
    "test_search_candidates_come_best_first_and_survive_any_query_text",
    "test_stats_count_messages_threads_tombstones_and_bytes",
    "test_the_same_message_twice_adds_nothing_and_a_tombstone_wins_over_a_copy",
]


def open_store(server: PostgresServer, schema: str, **options: object) -> PostgresChannelStore:
    return PostgresChannelStore(server.url, schema=schema, pool_size=2, **options)  # type: ignore[arg-type]


@pytest.fixture
def store(postgres: PostgresServer, pg_schema: str) -> Iterator[PostgresChannelStore]:
    opened = open_store(postgres, pg_schema)
    yield opened
    opened.close()


def test_a_deleted_file_leaves_its_message_and_the_table_files(
    postgres: PostgresServer, pg_schema: str
) -> None:
    store = open_store(postgres, pg_schema)
    ref = FileRef(artifact_id="F77", title="secret-roadmap-xq", filename="roadmap.pdf")
    store.write(post(msg(1, "see attached", files=(ref,))))
    store.write([FileShared(T, ref, "C1", ts(1)), PinChanged(T, "C1", ts(1), "U2", True)])
    assert store.file(T, "F77") == ref and store.pins(T, "C1") == [ts(1)]
    assert [c.ts for c in store.search_candidates(T, "C1", ["roadmap"], 5)] == [ts(1)]
    store.write([FileDeleted(T, "F77")])
    assert store.file(T, "F77") is None
    assert store.get(T, "C1", ts(1)).files == ()  # type: ignore[union-attr]
    assert store.search_candidates(T, "C1", ["roadmap"], 5) == []
    store.write([PinChanged(T, "C1", ts(1), "U2", False)])
    assert store.pins(T, "C1") == []
    store.close()
    assert b"secret-roadmap-xq" not in postgres.relation_bytes(pg_schema)


def test_forgetting_a_channel_erases_it_from_the_table_files_and_refuses_older_copies(
    postgres: PostgresServer, pg_schema: str
) -> None:
    store = open_store(postgres, pg_schema)
    store.write(post(msg(1, "plan mauvezebra"), msg(5, "more mauvezebra")))
    store.write([ChannelNamed(T, "C1", "secret-project"), ChannelForgotten(T, "C1")])
    assert store.messages(T, "C1") == [] and store.channel_names(T) == {}
    assert store.write(post(msg(3, "from an old export"))).deleted == 1
    assert store.write(post(msg(6, "said after the forget"))).applied == 1
    store.close()
    raw = postgres.relation_bytes(pg_schema)
    assert b"mauvezebra" not in raw and b"secret-project" not in raw
    assert b"said after the forget" in raw


def test_a_deletion_and_an_edit_leave_the_table_files_at_once(
    postgres: PostgresServer, pg_schema: str
) -> None:
    store = open_store(postgres, pg_schema)
    store.write(post(msg(1, "the password is zebrafinch"), msg(2, "draft kestrelword")))
    store.write([MessageDeleted(T, "C1", ts(1))])
    store.write(post(msg(2, "final", edited_ts=ts(9))))
    raw = postgres.relation_bytes(pg_schema)  # the store is still open
    assert b"zebrafinch" not in raw and b"kestrelword" not in raw and b"final" in raw
    store.close()


def test_retention_refuses_old_writes_and_purge_deletes_them_from_the_table_files(
    postgres: PostgresServer, pg_schema: str
) -> None:
    now = [float(BASE + 40 * 86_400)]
    store = open_store(postgres, pg_schema, retention_days=30, clock=lambda: now[0])
    result = store.write(post(msg(0, "too old"), msg(35 * 86_400, "recent oldword")))
    assert (result.applied, result.expired) == (1, 1)
    now[0] += 26 * 86_400
    assert store.purge() == 1
    assert store.messages(T, "C1") == []
    store.close()
    assert b"oldword" not in postgres.relation_bytes(pg_schema)
    with pytest.raises(ValueError, match="retention_days must be a positive integer, got 0"):
        open_store(postgres, pg_schema, retention_days=0)


def test_the_size_bound_drops_the_oldest_first_with_a_warning(
    store: PostgresChannelStore, caplog: pytest.LogCaptureFixture
) -> None:
    filler = "lorem ipsum dolor sit amet " * 20
    for start in range(0, 3000, 500):
        store.write(
            post(
                *(msg(s, f"{filler} n{s}", channel=f"C{s % 3}") for s in range(start, start + 500))
            )
        )
    before = store.stats().bytes_on_disk
    with caplog.at_level(logging.WARNING, logger="chanctx.cache.channel_store"):
        dropped = store.enforce_size(before // 2)
    assert dropped > 0
    assert f"dropped the {dropped} oldest" in caplog.text
    kept = sorted(m.ts for c in ("C0", "C1", "C2") for m in store.messages(T, c))
    assert kept == [ts(s) for s in range(dropped, 3000)]
    assert store.stats().bytes_on_disk <= before // 2


def test_a_cursor_commits_with_its_messages_and_a_second_store_object_sees_every_write(
    postgres: PostgresServer, pg_schema: str
) -> None:
    one, two = open_store(postgres, pg_schema), open_store(postgres, pg_schema)
    cursor = BackfillCursor(cursor="dXNlcjpV", oldest_ts=ts(1), updated=5.0)
    one.write([*post(msg(1), msg(2)), CursorSaved(T, "C1", "history", cursor)])
    assert two.cursor(T, "C1") == cursor and len(two.messages(T, "C1")) == 2
    two.write([MessageDeleted(T, "C1", ts(1))])
    assert one.write(post(msg(1))).deleted == 1  # the other replica's tombstone wins
    one.close()
    two.close()
    again = open_store(postgres, pg_schema)
    assert again.cursor(T, "C1") == cursor
    again.close()


def test_replicas_opening_at_once_migrate_once_and_a_newer_schema_stops_with_one_line(
    postgres: PostgresServer, pg_schema: str
) -> None:
    opened: list[PostgresChannelStore] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            opened.append(open_store(postgres, pg_schema))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and {s.schema_version for s in opened} == {2}
    for store in opened:
        store.close()
    with postgres.admin() as conn:
        conn.execute(f'UPDATE "{pg_schema}".schema_version SET version = 99')
    with pytest.raises(StoreTooNew, match="schema version 99 is newer than this chanctx reads"):
        open_store(postgres, pg_schema)


def test_bad_settings_are_one_line_errors(postgres: PostgresServer) -> None:
    with pytest.raises(ValueError, match="schema must be a lower-case SQL identifier"):
        PostgresChannelStore(postgres.url, schema="x; DROP TABLE y")
    with pytest.raises(ValueError, match="not a PostgreSQL URL"):
        PostgresChannelStore("host=== nonsense")


def test_an_unreachable_database_is_store_unavailable(postgres: PostgresServer) -> None:
    url = postgres.url.replace(str(postgres.port), "1")  # nothing listens on port 1
    with pytest.raises(StoreUnavailable) as raised:
        PostgresChannelStore(url, connect_timeout=1.0)
    assert isinstance(raised.value, OSError)


def test_postgres_stopped_mid_stream_refuses_writes_then_recovers_losing_no_committed_batch(
    postgres: PostgresServer, pg_schema: str
) -> None:
    store = open_store(postgres, pg_schema, connect_timeout=1.0, statement_timeout=2.0)
    batches, size = 60, 20
    acked: list[int] = []
    refused: list[OSError] = []
    done = threading.Event()

    def writer() -> None:
        deadline = time.monotonic() + 120
        for batch in range(batches):
            events = post(*(msg(batch * size + i) for i in range(size)))
            while time.monotonic() < deadline:
                try:
                    store.write(events)
                except StoreUnavailable as error:
                    refused.append(error)  # not acked: the sender delivers it again
                    time.sleep(0.05)
                    continue
                acked.append(batch)
                break
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    while len(acked) < 10:
        time.sleep(0.01)
    postgres.stop("fast")
    while not refused:
        time.sleep(0.01)
    with pytest.raises(StoreUnavailable):
        store.messages(T, "C1")  # reads refuse the same way
    postgres.start()
    assert done.wait(120)
    thread.join()
    assert acked == list(range(batches))
    assert [m.ts for m in store.messages(T, "C1")] == [ts(s) for s in range(batches * size)]
    store.close()


@pytest.mark.slow
def test_a_server_restart_between_two_reads_fails_neither(
    postgres: PostgresServer, pg_schema: str
) -> None:
    """The pool checks a connection before handing it out unless it ran a statement a moment
    ago (a quarter of a second): one idle longer that died with the server is replaced."""
    store = open_store(postgres, pg_schema)
    store.write(post(msg(1)))
    assert [m.ts for m in store.messages(T, "C1")] == [ts(1)]
    postgres.stop("fast")
    postgres.start()
    time.sleep(1.0)  # the connection idles past the window in which it is trusted unchecked
    assert [m.ts for m in store.messages(T, "C1")] == [ts(1)]
    store.close()


def test_a_statement_past_the_timeout_is_store_unavailable(
    postgres: PostgresServer, pg_schema: str
) -> None:
    store = open_store(postgres, pg_schema, statement_timeout=0.5)
    store.write(post(msg(1)))
    with postgres.admin() as admin, admin.transaction():
        admin.execute(f'LOCK TABLE "{pg_schema}".messages IN ACCESS EXCLUSIVE MODE')
        with pytest.raises(StoreUnavailable, match="statement timeout"):
            store.write(post(msg(2)))
    assert store.write(post(msg(2))).applied == 1
    store.close()


def test_the_store_refuses_psycopg_programming_errors_loudly(store: PostgresChannelStore) -> None:
    # A bug (not an outage) must not pass for one: it stays a psycopg error, not an OSError.
    with pytest.raises(psycopg.Error) as raised:
        store._query("SELECT * FROM no_such_table")
    assert not isinstance(raised.value, OSError)
