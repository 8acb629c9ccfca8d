"""``search_candidates`` on PostgreSQL keeps what it read per term while the channel's search
version holds (``_pg_search_cache``), and no write is ever answered from a stale read: two
stores on one database (two replicas), each keeping its reads, written through in any order
(posts, bulk posts, edits, deletions, forgotten users, deleted files, forgotten channels,
retention purges, size cuts), answer each question, asked once, twice and three times (the
statement, then read and kept, then from what was kept), exactly as a search that keeps
nothing; a write through one replica is found through the other at once; a purge and a size
cut run against writes without a deadlock; a store at schema version 1 migrates to 2."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from chanctx.cache.channel_store import (
    ChannelForgotten,
    FileShared,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PostgresChannelStore,
    StoreEvent,
    plain_message_row,
    post_rows,
)
from chanctx.cache.channel_store._pg_search import LEXEMES_AFTER, PgSearch
from chanctx.cache.channel_store._pg_search_cache import SearchCache
from chanctx.context import FileRef, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg.rows import TupleRow

from tests.support.postgres_server import (
    PostgresServer,
    drop_schema,
    new_schema,
    pg_schema,
    postgres,
)
from tests.support.store_steps import BASE, T, event, ts

__all__ = ["pg_schema", "postgres"]

WORDS = ("deploy", "pool", "zanzibar", "lunch", "timeout")
ASKED = (
    ["deploy"],
    ["deploy", "zanzibar"],
    ["pool", "lunch"],
    ["deploy", "pool", "timeout"],
    ["zanzibar", "timeout", "lunch"],
)
SEEDED = 60  # messages each channel starts with: past the small sample and drive below


def seed_text(n: int) -> str:
    """Common words (deploy in every 2nd message, pool every 3rd, ...), a rare one."""
    words = [w for w, every in zip(WORDS, (2, 3, 17, 5, 4), strict=True) if n % every == 0]
    return " ".join(words or ["hello"])


def open_store(server: PostgresServer, schema: str) -> PostgresChannelStore:
    # Retention of a day at a clock just after the messages, so a purge step can cut them.
    return PostgresChannelStore(
        server.url,
        schema=schema,
        pool_size=2,
        retention_days=1,
        erase_interval=None,
        clock=lambda: float(BASE + 100),
    )


def searcher(store: PostgresChannelStore, cache: SearchCache | None) -> PgSearch:
    """The store's search with a small sample, drive and "large", and its sample's words
    kept early: a channel of tens of messages takes every path (common terms, pairs, the
    fill, the cap on older ones, new words looked up)."""
    return PgSearch(store._query, sample=12, drive=15, large=30, cache=cache, lexemes_after=2)


def answers(store: PostgresChannelStore, search: PgSearch) -> list[object]:
    out: list[object] = []
    for channel in ("C1", "C2"):
        chan = store._chan(T, channel)
        for terms in ASKED:
            for before, limit in ((None, 7), (BASE * 10**9 + 40 * 10**9, 7)):
                found = [] if chan is None else search.candidates(chan, terms, limit, before=before)
                out.append([(c.ts, c.score) for c in found])
    return out


def apply(store: PostgresChannelStore, step: tuple[int, int, str, list[str]]) -> None:
    kind, second, channel, words = step
    if kind == 7:
        rows = [plain_message_row(ts(60 + second * 3 + n), "U1", " ".join(words)) for n in range(3)]
        post_rows(store, T, channel, rows)
    elif kind == 8:
        store.purge(now=BASE + 86_400 + second)  # what is older than ``second`` goes
    elif kind == 9:
        store.enforce_size(int(store.bytes_on_disk() * 0.9))  # the oldest go
    else:
        if kind == 5:
            store.write([FileShared(T, FileRef(artifact_id="F1"), channel, ts(second))])
        store.write([event(kind, second, channel, words)])


def seed(store: PostgresChannelStore) -> None:
    for channel in ("C1", "C2"):
        rows = [
            plain_message_row(ts(n), "U2" if n % 7 == 0 else "U1", seed_text(n))
            for n in range(SEEDED)
        ]
        post_rows(store, T, channel, rows)


_step = st.tuples(
    st.integers(0, 9),  # 0-6 an event, 7 a bulk post of new rows, 8 a purge, 9 a size cut
    st.integers(0, SEEDED),
    st.sampled_from(["C1", "C2"]),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
)


@pytest.mark.slow
@settings(deadline=None, max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), _step), min_size=1, max_size=8))
def test_two_replicas_keeping_reads_answer_as_a_search_that_keeps_nothing(
    postgres: PostgresServer, steps: list[tuple[bool, tuple[int, int, str, list[str]]]]
) -> None:
    schema = new_schema(postgres)
    one, two, fresh = (open_store(postgres, schema) for _ in range(3))
    kept = [(one, searcher(one, SearchCache())), (two, searcher(two, SearchCache()))]
    nothing = searcher(fresh, None)
    try:
        seed(one)
        for store, search in kept:
            for _ in range(3):  # the statement, then read and kept, then from what was kept
                assert answers(store, search) == answers(fresh, nothing)
        for through_two, step in steps:
            apply(two if through_two else one, step)
            expected = answers(fresh, nothing)
            for store, search in kept:
                for _ in range(3):
                    assert answers(store, search) == expected
    finally:
        for store in (one, two, fresh):
            store.close()
        drop_schema(postgres, schema)


def test_a_write_through_one_replica_is_found_through_the_other_at_once(
    postgres: PostgresServer, pg_schema: str
) -> None:
    one, two = open_store(postgres, pg_schema), open_store(postgres, pg_schema)
    seed(one)

    def found(terms: list[str]) -> set[str]:
        for _ in range(3):  # the third answer comes from what the second kept
            answer = {c.ts for c in two.search_candidates(T, "C1", terms, 200)}
        cache = two.search_cache
        assert cache is not None and len(cache) == 1
        return answer

    # Each question is asked (and its reads kept) before the write, and again after it.
    assert ts(90) not in found(["zanzibar"])
    one.write([MessagePosted(T, Message(channel="C1", ts=ts(90), user_id="U1", text="zanzibar"))])
    assert ts(90) in found(["zanzibar"]) and ts(90) not in found(["lunch"])
    one.write([MessageEdited(T, "C1", ts(90), "lunch", ts(1_090))])
    assert ts(90) not in found(["zanzibar"]) and ts(90) in found(["lunch"])
    assert ts(0) in found(["deploy"])
    one.write([MessageDeleted(T, "C1", ts(0))])
    assert ts(0) not in found(["deploy"])
    assert ts(91) not in found(["zanzibar", "pool"])
    post_rows(one, T, "C1", [plain_message_row(ts(91), "U1", "zanzibar pool")])
    assert ts(91) in found(["zanzibar", "pool"])
    assert min(found(["deploy"])) < ts(30)
    assert one.purge(now=BASE + 86_400 + 30) > 0  # what is older than second 30 goes
    assert min(found(["deploy"])) >= ts(30)
    one.write([ChannelForgotten(T, "C1")])
    assert found(["deploy"]) == set()
    one.close()
    two.close()


def test_a_new_word_after_a_write_is_not_looked_up_in_the_words_kept_before(
    postgres: PostgresServer, pg_schema: str
) -> None:
    one, two = open_store(postgres, pg_schema), open_store(postgres, pg_schema)
    seed(one)
    chan = two._chan(T, "C1")
    assert chan is not None
    statements: list[str] = []

    def query(sql: str, args: Sequence[object] = ()) -> list[TupleRow]:
        statements.append(sql)
        return two._query(sql, args)

    search = PgSearch(query, cache=SearchCache())
    for _ in range(LEXEMES_AFTER):
        search.candidates(chan, ["deploy"], 5)
    assert any("unnest" in sql for sql in statements)  # the sample's words, kept
    statements.clear()
    search.candidates(chan, ["pool"], 5)  # a new word at the same version: looked up
    assert "phraseto_tsquery" in statements[0] and "array_agg" not in statements[0]
    post_rows(one, T, "C1", [plain_message_row(ts(92), "U1", "quokka deploy")])
    statements.clear()
    found = search.candidates(chan, ["quokka"], 5)
    assert [c.ts for c in found] == [ts(92)]
    # Looked up, but the version had moved: the words kept were the version before's, so
    # the sample is read again, tested on the rows.
    assert "array_agg" not in statements[0] and "max(seq)" in statements[0]
    assert "array_agg" in statements[1]
    assert found == PgSearch(two._query, cache=None).candidates(chan, ["quokka"], 5)
    one.close()
    two.close()


def test_purges_and_size_cuts_run_against_writes_without_a_deadlock(
    postgres: PostgresServer, pg_schema: str
) -> None:
    writer, cutter = open_store(postgres, pg_schema), open_store(postgres, pg_schema)
    seed(writer)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for n in range(40):  # posts and deletions of old messages (the erase flag too)
                events: list[StoreEvent] = [
                    MessagePosted(
                        T, Message(channel="C1", ts=ts(200 + n), user_id="U1", text="deploy")
                    ),
                    MessageDeleted(T, "C2", ts(n)),
                    MessageEdited(T, "C1", ts(n), "pool", ts(2_000 + n)),
                ]
                writer.write(events)
        except BaseException as error:
            errors.append(error)

    def cut() -> None:
        try:
            for n in range(6):
                cutter.purge(now=BASE + 86_400 + 5 * n)
                cutter.enforce_size(int(cutter.bytes_on_disk() * 0.95))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write), threading.Thread(target=cut)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    kept, nothing = searcher(writer, SearchCache()), searcher(cutter, None)
    for _ in range(3):
        assert answers(writer, kept) == answers(cutter, nothing)
    writer.close()
    cutter.close()


def test_a_version_1_schema_migrates_and_its_writes_move_the_search_version(
    postgres: PostgresServer, pg_schema: str
) -> None:
    store = open_store(postgres, pg_schema)
    for channel in ("C1", "C2"):
        post_rows(store, T, channel, [plain_message_row(ts(1), "U1", "deploy")])
    store.close()
    with postgres.admin() as conn:  # as version 1 left it
        for statement in (
            "DROP INDEX {s}.messages_seq",
            "ALTER TABLE {s}.messages DROP COLUMN seq",
            "DROP SEQUENCE {s}.message_seq",
            "ALTER TABLE {s}.schema_version DROP COLUMN removed",
            "UPDATE {s}.schema_version SET version = 1",
        ):
            conn.execute(statement.format(s=f'"{pg_schema}"').encode())
    store = open_store(postgres, pg_schema)
    assert store.schema_version == 2
    for _ in range(3):
        assert [c.ts for c in store.search_candidates(T, "C1", ["deploy"], 5)] == [ts(1)]
    other = open_store(postgres, pg_schema)
    other.write([MessagePosted(T, Message(channel="C1", ts=ts(2), user_id="U1", text="deploy"))])
    assert [c.ts for c in store.search_candidates(T, "C1", ["deploy"], 5)] == [ts(2), ts(1)]
    other.write([MessageDeleted(T, "C1", ts(1))])  # a row the migration left without a seq
    assert [c.ts for c in store.search_candidates(T, "C1", ["deploy"], 5)] == [ts(2)]
    for _ in range(3):  # every row without a seq: the version is (none, removals) throughout
        assert [c.ts for c in store.search_candidates(T, "C2", ["deploy"], 5)] == [ts(1)]
    other.write([ChannelForgotten(T, "C2")])
    assert store.search_candidates(T, "C2", ["deploy"], 5) == []
    other.close()
    store.close()
