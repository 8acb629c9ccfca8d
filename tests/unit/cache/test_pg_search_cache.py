"""``_pg_search_cache``'s parts that need no database: membership by binary search, the fill
rebuilt from kept per-term fills (the newest rows holding any of the terms, as the statement's
backward scan finds them, or nothing when a kept fill does not reach), and the bounds on what
is kept (channels, least recently searched out first; a channel past its bound starts over).
The answers against the database's are ``tests/process/cache/test_channel_store_postgres_search_cache.py``'s."""

from __future__ import annotations

import numpy as np
from chanctx.cache.channel_store._pg_search_cache import (
    Fill,
    Pieces,
    SearchCache,
    fill_rows,
    member,
)
from hypothesis import given
from hypothesis import strategies as st


@given(st.sets(st.integers(0, 60)), st.lists(st.integers(-5, 65), max_size=40))
def test_member_is_set_membership(among: set[int], keys: list[int]) -> None:
    found = member(np.array(keys, dtype=np.int64), np.array(sorted(among), dtype=np.int64))
    assert found.tolist() == [k in among for k in keys]


def read_fill(positions: set[int], scan: int, limit: int) -> Fill:
    """What a read of one term's fill keeps: its first ``limit`` matches within ``scan``
    (the key of a row is its position here), reaching the last one or the scan's end."""
    matches = sorted(p for p in positions if p <= scan)[:limit]
    reach = matches[-1] if len(matches) >= limit else scan
    return Fill([(p, p) for p in matches], np.array(matches, dtype=np.int64), reach)


_term = st.sets(st.integers(1, 80), max_size=40)  # positions of the rows holding a term


@given(
    st.lists(st.tuples(_term, st.integers(1, 90), st.integers(1, 12)), min_size=1, max_size=3),
    st.integers(1, 90),
    st.integers(1, 12),
)
def test_the_fill_from_kept_fills_is_the_backward_scans_or_nothing(
    terms: list[tuple[set[int], int, int]], scan: int, limit: int
) -> None:
    pieces = Pieces((0, 0))
    phrases = [f"t{n}" for n in range(len(terms))]
    for phrase, (positions, read_scan, read_limit) in zip(phrases, terms, strict=True):
        pieces.fills[(None, phrase)] = read_fill(positions, read_scan, read_limit)
    found = fill_rows(pieces, phrases, range(len(terms)), scan, limit, None)
    union = sorted({p for positions, _, _ in terms for p in positions if p <= scan})
    assert found is None or found == [(p, p) for p in union[:limit]]
    fills = [pieces.fills[(None, p)] for p in phrases]
    # Each fill reaching the scan's end, or holding ``limit`` matches within it: enough.
    if all(f.reach >= scan or sum(p <= scan for p, _ in f.matches) >= limit for f in fills):
        assert found is not None


def test_channels_go_least_recently_searched_first_and_a_full_one_starts_over() -> None:
    cache = SearchCache(channels=2, held=10)
    one = cache.start(1, (5, 0), moving=False)
    cache.start(2, (7, 0), moving=False)
    assert cache.get(1) is one  # 1 searched last: 2 goes
    cache.start(3, (1, 0), moving=False)
    assert cache.get(2) is None and cache.get(1) is one and len(cache) == 2
    one.held = 11
    cache.trim(1, one)
    fresh = cache.get(1)
    assert fresh is not None and fresh is not one and fresh.version == (5, 0)
    assert fresh.held == 0
