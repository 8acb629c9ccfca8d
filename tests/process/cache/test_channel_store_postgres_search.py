"""``search_candidates`` on PostgreSQL in a channel larger than the sample its frequencies are
estimated on (``_pg_search``): a rare term is found wherever it is, common terms are found
together through their pair before the newest messages holding one of them, a term of stop
words only is no term, ``before`` offers only the older part; and the channel's size, which
the frequencies need, is counted off the answer's path once the channel is large."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest
from chanctx.cache import ts_key
from chanctx.cache.channel_store import PostgresChannelStore, plain_message_row, post_rows
from chanctx.cache.channel_store._pg_search import DRIVE, OLDER, SAMPLE, PgSearch
from chanctx.cache.channel_store._pg_search_cache import SearchCache
from chanctx.cache.channel_store._pg_sizes import SIZE_TTL, ChannelSizes
from psycopg.rows import TupleRow

from tests.support.postgres_server import PostgresServer, pg_schema, postgres

__all__ = ["pg_schema", "postgres"]

T, C = "T1", "C1"
SIZE = 12_000
RARE_AT = (5, SIZE - 10)  # one far older than the sample, one inside it


def ts(n: int) -> str:
    return f"{1_700_000_000 + n}.000100"


def text(n: int) -> str:
    """Every message says "deploy"; "alpha" every 2nd, "beta" every 2nd the other way or
    every 3rd (both: every 6th), "zebra" twice."""
    words = ["deploy", f"note{n}"]
    if n % 2 == 0:
        words.append("alpha")
    if n % 2 == 1 or n % 3 == 0:
        words.append("beta")
    if n in RARE_AT:
        words.append("zebra")
    return " ".join(words)


@pytest.fixture(scope="module")
def store(postgres: PostgresServer) -> Iterator[PostgresChannelStore]:
    schema = "t_search_candidates"
    with postgres.admin() as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    opened = PostgresChannelStore(postgres.url, schema=schema, pool_size=2)
    for start in range(0, SIZE, 4_000):
        rows = [plain_message_row(ts(n), "U1", text(n)) for n in range(start, start + 4_000)]
        post_rows(opened, T, C, rows)
    yield opened
    opened.close()
    with postgres.admin() as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_the_channel_is_larger_than_the_sample_and_its_common_terms_than_a_search_reads() -> None:
    assert SIZE > SAMPLE and SIZE // 2 > DRIVE and SIZE // 6 < DRIVE


def test_a_rare_term_is_found_however_old_and_ranks_above_a_common_one(
    store: PostgresChannelStore,
) -> None:
    found = store.search_candidates(T, C, ["deploy", "zebra"], 5)
    assert [c.ts for c in found[:2]] == [ts(RARE_AT[1]), ts(RARE_AT[0])]
    assert len(found) == 5  # then the newest messages holding the common term
    assert found[0].score > found[2].score > 0
    assert all(c.ts not in {ts(n) for n in RARE_AT} for c in found[2:])


def test_two_common_terms_find_the_messages_holding_both_first(
    store: PostgresChannelStore,
) -> None:
    found = store.search_candidates(T, C, ["alpha", "beta"], 300)
    assert len(found) == 300
    both = {ts(n) for n in range(SIZE) if n % 6 == 0}
    assert all(c.ts in both for c in found)
    newest_both = sorted((n for n in range(SIZE) if n % 6 == 0), reverse=True)[:300]
    assert [c.ts for c in found] == [ts(n) for n in newest_both]  # equal scores: newer first


def test_a_term_of_stop_words_only_is_no_term(store: PostgresChannelStore) -> None:
    assert store.search_candidates(T, C, ["the", "a"], 5) == []
    assert [c.ts for c in store.search_candidates(T, C, ["the", "zebra"], 5)] == [
        ts(RARE_AT[1]),
        ts(RARE_AT[0]),
    ]
    assert store.search_candidates(T, "C9", ["zebra"], 5) == []
    assert store.search_candidates(T, C, ["zebra"], 0) == []


def test_before_offers_the_older_rare_match_and_the_newest_older_common_ones(
    store: PostgresChannelStore,
) -> None:
    cut = SIZE - 100  # the caller's index holds this message and every newer one
    found = store.search_candidates(T, C, ["deploy", "zebra"], 5, before=ts(cut))
    assert found[0].ts == ts(RARE_AT[0])  # RARE_AT[1] is newer than the cut
    assert len(found) == 5
    assert {c.ts for c in found[1:]} <= {ts(n) for n in range(cut - 5, cut)}
    assert store.search_candidates(T, C, ["zebra"], 5, before=ts(RARE_AT[0])) == []


def test_a_large_channel_offers_few_older_candidates(store: PostgresChannelStore) -> None:
    chan = store._chan(T, C)
    assert chan is not None
    cut = ts_key(ts(SIZE - 100))
    small = PgSearch(store._query)  # SIZE is under LARGE: what the caller asks for
    assert len(small.candidates(chan, ["deploy", "zebra"], 50, before=cut)) == 50
    large = PgSearch(store._query, large=SIZE // 2)
    found = large.candidates(chan, ["deploy", "zebra"], 50, before=cut)
    assert len(found) == OLDER and found[0].ts == ts(RARE_AT[0])
    assert len(large.candidates(chan, ["deploy", "zebra"], 50)) == 50  # no before: no cap


def test_a_large_channels_older_candidates_intersect_no_pair(store: PostgresChannelStore) -> None:
    chan = store._chan(T, C)
    assert chan is not None
    cut = SIZE - 100
    statements: list[str] = []

    def query(sql: str, args: Sequence[object] = ()) -> list[TupleRow]:
        statements.append(sql)
        return store._query(sql, args)

    large = PgSearch(query, large=SIZE // 2, cache=None)
    found = large.candidates(chan, ["alpha", "beta"], 50, before=ts_key(ts(cut)))
    assert not any("&&" in sql for sql in statements)  # the pair's GIN intersection
    # The newest older messages holding a common term, those holding both first.
    assert {c.ts for c in found} == {ts(n) for n in range(cut - OLDER, cut)}
    both = sorted((n for n in range(cut - OLDER, cut) if n % 6 == 0), reverse=True)
    assert [c.ts for c in found[: len(both)]] == [ts(n) for n in both]
    statements.clear()  # without before, or in a smaller channel: the pair is read
    assert len(large.candidates(chan, ["alpha", "beta"], 50)) == 50
    assert any("&&" in sql for sql in statements)
    statements.clear()
    PgSearch(query, cache=None).candidates(chan, ["alpha", "beta"], 50, before=ts_key(ts(cut)))
    assert any("&&" in sql for sql in statements)


def test_a_new_questions_words_version_and_sample_are_one_statement(
    store: PostgresChannelStore,
) -> None:
    chan = store._chan(T, C)
    assert chan is not None
    statements: list[str] = []

    def query(sql: str, args: Sequence[object] = ()) -> list[TupleRow]:
        if not sql.startswith(("EXPLAIN", "SELECT count(*)")):  # the channel's size
            statements.append(sql)
        return store._query(sql, args)

    search = PgSearch(query, cache=SearchCache(), lexemes_after=3)
    fresh = PgSearch(store._query, cache=None)  # keeps nothing: the answers to get
    first = search.candidates(chan, ["deploy", "zebra", "the"], 5)
    head = statements[0]
    assert "phraseto_tsquery" in head and "max(seq)" in head and "array_agg" in head
    assert len(statements) == 2  # then the rows it lacks, in one more
    assert first == fresh.candidates(chan, ["deploy", "zebra"], 5)
    statements.clear()
    assert search.candidates(chan, ["zebra", "deploy"], 5) == first
    assert len(statements) == 1 and "phraseto_tsquery" not in statements[0]  # the version
    statements.clear()
    # A new word beside a known one; the third search at this version also reads the
    # sample's words (lexemes_after), so a later new word is looked up there.
    assert search.candidates(chan, ["zebra", "alpha"], 5) == fresh.candidates(
        chan, ["zebra", "alpha"], 5
    )
    assert "array_agg" in statements[0] and "max(seq)" in statements[0]
    assert len(statements) == 3 and "unnest" in statements[1]  # then the rows it lacks
    statements.clear()
    for terms in (["beta", "deploy"], ["note7", "zebra"], ["note11-deploy", "alpha"]):
        assert search.candidates(chan, terms, 5) == fresh.candidates(chan, terms, 5)
    heads = [sql for sql in statements if "phraseto_tsquery" in sql]  # one a search
    assert len(heads) == 3 and all("max(seq)" in sql for sql in heads)
    assert not any("array_agg" in sql for sql in heads[:2])  # words: looked up
    assert "array_agg" in heads[2]  # a phrase of several words: tested on the rows


def test_a_large_channel_is_counted_off_the_answers_path(
    store: PostgresChannelStore, postgres: PostgresServer
) -> None:
    with postgres.admin() as conn:
        conn.execute("ANALYZE t_search_candidates.messages")  # autovacuum's, for the planner
    now = [0.0]
    counts: list[Callable[[], None]] = []  # recounts started, run here when the test says
    chan = store._chan(T, C)
    assert chan is not None
    sizes = ChannelSizes(store._query, lambda: now[0], counts.append, count_now=SIZE // 10)
    guess = sizes.size(chan)  # never counted, estimated large: the planner's estimate
    assert SIZE // 2 <= guess <= 2 * SIZE and len(counts) == 1
    assert sizes.size(chan) == guess and len(counts) == 1  # being counted: not twice
    counts[0]()
    assert sizes.size(chan) == SIZE and len(counts) == 1
    now[0] += SIZE_TTL
    assert sizes.size(chan) == SIZE and len(counts) == 2  # stale: served while it is recounted
    small = ChannelSizes(store._query, lambda: now[0], counts.append, count_now=2 * SIZE)
    assert small.size(chan) == SIZE and len(counts) == 2  # estimated small: counted on the spot
