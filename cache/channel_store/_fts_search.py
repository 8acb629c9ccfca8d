"""``search_candidates`` on SQLite: the messages of a channel worth ranking for some terms,
read from the FTS5 shards without scoring every message a common word is in.

FTS5 computes ``bm25()`` for every row a query matches before ``ORDER BY rank LIMIT n`` keeps
the best, and each call reads the row's length from the index: a word in 4% of a channel of
1,000,000 messages is 40,000 calls, and an intent of two such words took 0.6-0.8 s on the
measurement machine, where reading the newest 2,000 row ids of each took under a millisecond
(docs/store.md, "Known limits"). So a search reads row ids, and lets ``bm25()`` score only a
few:

1. *Row ids, up to a cap.* Each term's matching row ids are read newest first (FTS5 walks its
   postings backwards and stops), newest shard first, at most :data:`CAP` + 1 of them: a rare
   term's whole list, a common term's newest :data:`CAP`.
2. *Few matches: today's answer.* When every term is rare and they match at most
   :data:`SCORED` messages together, ``bm25()`` ranks them all, best first (a small channel,
   a rare word).
3. *Many: scored here.* Otherwise each message read scores the inverse document frequencies of
   the terms it holds (a common term's frequency taken as at least :data:`CAP`, so it weighs
   less than any rare one), ties to the newer, and the best ``limit`` are kept: a rare word's
   matches all come first, then the newest messages holding the most common words.

With ``before`` (the caller's index holds that message and every newer one), the best
``limit`` of the older matches are sought among the best :data:`WINDOW` of all: their ts are
read in growing steps until ``limit`` are older (an intent of rare words stops after a few
dozen rows).

The caller ranks them with every signal it has; what changes against scoring every match is
only which of many common-word matches reach it: the newest, not the shortest anywhere in the
channel. A message holding a common word beyond its newest :data:`CAP` matches counts only the
rare words it holds.

*Remembered.* Reading a common term's 2,000 row ids and their ts was most of a search's
candidates (6-14 ms at 1,000,000 messages), and the same words come back in question after
question (a service's name). :class:`RowCache` keeps each term's row ids and the channel's
shards, tagged with the channel's write generation (bumped by the store after every
transaction that named the channel) and the store's epoch (bumped by a purge, a size cut, an
erased channel, or, for a read-only store, any commit another connection made, which
``PRAGMA data_version`` tells): an entry whose tags moved is read again. The ts of the rows
read are tagged with the epoch alone: a row keeps its ts until it is deleted, and only
deletions (which free row ids for other messages) move the epoch, so a busy channel's writes
do not make every ts be read again. Tags are taken before the read, so a write that lands
during it leaves the entry stale-tagged, never stale and trusted.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
from chanctx.cache import ts_key
from chanctx.cache.channel_store._fts import SHARD_BITS, shard_table
from chanctx.cache.channel_store._records import Candidate

__all__ = ["CAP", "SCORED", "WINDOW", "RowCache", "candidates"]

CAP = 2_000  # row ids read a term, at most (one more tells a common term)
SCORED = 200  # matches bm25() ranks, at most (each call reads the row's length)
WINDOW = 200  # with ``before``: the best matches of all among which the older are sought
_SHARDS_A_QUERY = 100  # a compound SELECT holds at most 500 (SQLite's default limit)
_IDS_A_QUERY = 900  # bound parameters a statement, under SQLite's old default of 999
_TERMS_KEPT = 512  # terms' row ids remembered (each at most CAP + 1 ids, 8 bytes each)
_TS_KEPT = 50_000  # rows' ts remembered, all channels together

Query = Callable[[str, Sequence[Any]], list[Any]]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


Tags = tuple[int, int]  # (the store's epoch, the channel's write generation)
Stamp = tuple[str, int]  # a row's ts and its exact sort key (``ts_key``, stored beside it)


class RowCache:
    """Terms' row ids, rows' ts and channels' shards read before, valid while their tags hold
    (see the module docstring). Thread-safe: readers on many threads share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._epoch = 0
        self._generations: dict[int, int] = {}
        self._terms: OrderedDict[tuple[int, str], tuple[Tags, array[int]]] = OrderedDict()
        self._ts: dict[int, tuple[int, int, Stamp]] = {}  # row -> (epoch, its channel, ts)
        self._shards: dict[int, tuple[Tags, list[int]]] = {}

    def tags(self, chan: int) -> Tags:
        return self._epoch, self._generations.get(chan, 0)

    def wrote(self, chans: Sequence[int] | set[int]) -> None:
        """A transaction that named ``chans`` ended (committed or not): their entries go stale."""
        with self._lock:
            for chan in chans:
                self._generations[chan] = self._generations.get(chan, 0) + 1

    def wrote_all(self) -> None:
        """Something may have changed any channel (a purge, another process's commit)."""
        with self._lock:
            self._epoch += 1
            self._terms.clear()
            self._ts.clear()
            self._shards.clear()

    def shards(self, chan: int, read: Callable[[], list[int]]) -> list[int]:
        tags = self.tags(chan)
        found = self._shards.get(chan)
        if found is not None and found[0] == tags:
            return found[1]
        shards = read()
        with self._lock:
            self._shards[chan] = (tags, shards)
        return shards

    def rows(self, chan: int, phrase: str, read: Callable[[], list[int]]) -> array[int]:
        """``phrase``'s row ids in ``chan`` (newest first, at most CAP + 1), read when stale."""
        tags = self.tags(chan)
        key = (chan, phrase)
        with self._lock:
            found = self._terms.get(key)
            if found is not None and found[0] == tags:
                self._terms.move_to_end(key)
                return found[1]
        ids = array("q", read())
        with self._lock:
            self._terms[key] = (tags, ids)
            self._terms.move_to_end(key)
            while len(self._terms) > _TERMS_KEPT:
                self._terms.popitem(last=False)
        return ids

    def ts_of(
        self, chan: int, rows: Sequence[int], read: Callable[[Sequence[int]], dict[int, Stamp]]
    ) -> dict[int, Stamp]:
        """The ts (and sort key) of those of ``rows`` that are ``chan``'s messages; the rest
        read."""
        # A row's ts never changes while its id is its own: only the epoch (rows deleted, ids
        # free again) makes what is remembered stale, not a write to the channel.
        epoch = self._epoch
        out: dict[int, Stamp] = {}
        missing: list[int] = []
        known = self._ts
        for row in rows:
            found = known.get(row)
            if found is not None and found[0] == epoch and found[1] == chan:
                out[row] = found[2]
            else:
                missing.append(row)
        if missing:
            fresh = read(missing)
            out.update(fresh)
            with self._lock:
                if len(known) + len(fresh) > _TS_KEPT:
                    known.clear()
                for row, stamp in fresh.items():
                    known[row] = (epoch, chan, stamp)
        return out


def candidates(
    query: Query,
    chan: int,
    shards: Sequence[int],
    phrases: Sequence[str],
    limit: int,
    cache: RowCache | None = None,
    *,
    before: int | None = None,
) -> list[Candidate]:
    """The best ``limit`` messages of channel ``chan`` for any of ``phrases`` (FTS5 phrase
    queries of the channel's scoped terms), read as the module docstring says; ``cache``:
    where row ids and ts read before are kept. ``before`` (a ts key): the best ``limit`` of
    those older, sought among the best ``limit`` of all, or :data:`WINDOW` if more."""
    cache = cache or RowCache()
    window = limit if before is None else max(limit, WINDOW)
    newest_first = sorted(shards, reverse=True)
    found = [
        cache.rows(chan, phrase, partial(_row_ids, query, newest_first, phrase))
        for phrase in phrases
    ]
    if all(len(ids) <= CAP for ids in found) and _distinct(found) <= SCORED:
        ranked = _ranked(query, chan, newest_first, " OR ".join(phrases), window)
        older = ranked if before is None else [c for c in ranked if ts_key(c.ts) < before]
        return older[:limit]
    # Any row count above every term's: the shards the channel has words in hold at most this.
    size = max(len(newest_first) << SHARD_BITS, max(map(len, found)) + 1)
    rows, score = _scored(found, size)
    # Best score first, ties to the newer (larger) row id.
    order = np.lexsort((-rows, -score))[:window]
    best, best_score = rows[order].tolist(), score[order].tolist()
    read = partial(_ts_of, query, chan)
    out: list[Candidate] = []
    start, step = 0, max(2 * limit, 32)  # ts read in growing steps, until ``limit`` are older
    while start < len(best) and len(out) < limit:
        part = best[start : start + step]
        stamps = cache.ts_of(chan, part, read)
        for row, row_score in zip(part, best_score[start : start + step], strict=True):
            stamp = stamps.get(row)
            if stamp is not None and (before is None or stamp[1] < before):
                out.append(Candidate(stamp[0], row_score))
                if len(out) == limit:
                    break
        start, step = start + step, 2 * step
    return out


def _distinct(found: Sequence[Sequence[int]]) -> int:
    """How many rows ``found`` names (a row read for two terms counts once)."""
    total = sum(map(len, found))
    if total <= SCORED:
        return total
    ordered, _ = _sorted_rows(found)
    return int(np.count_nonzero(_firsts(ordered)))


def _scored(found: Sequence[Sequence[int]], size: int) -> tuple[IntArray, FloatArray]:
    """(every row read, ascending; its score): the sum of the weights of the terms that read
    it, added in term order from 0.0 (``bincount`` adds its weights in input order), as a
    per-row loop would."""
    weights: list[float] = []
    for ids in found:
        df = max(len(ids), CAP + 1) if len(ids) > CAP else len(ids)
        weights.append(math.log(1.0 + (size - df + 0.5) / (df + 0.5)))
    each = np.repeat(np.array(weights, dtype=np.float64), [len(ids) for ids in found])
    ordered, order = _sorted_rows(found)
    first = _firsts(ordered)
    rows = ordered[first]
    where = np.empty(len(ordered), dtype=np.int64)
    where[order] = np.cumsum(first) - 1  # each read's row, as an index into ``rows``
    score: FloatArray = np.bincount(where, weights=each, minlength=len(rows)).astype(np.float64)
    return rows, score


def _sorted_rows(found: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """(every row read, ascending, repeats kept; where each came from in the reads laid end to
    end). A stable sort of lists each already sorted (newest first: reversed, then merged) is
    far cheaper than ``np.unique``, which starts from scratch."""
    read = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in found])
    order = np.argsort(read, kind="stable")
    return read[order], order


def _firsts(ordered: IntArray) -> npt.NDArray[np.bool_]:
    """Which cells of ascending ``ordered`` start a run of equal values."""
    first = np.ones(len(ordered), dtype=np.bool_)
    if len(ordered) > 1:
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return first


def _row_ids(query: Query, shards: Sequence[int], expression: str) -> list[int]:
    """The newest :data:`CAP` + 1 row ids matching ``expression`` (all of them if fewer)."""
    out: list[int] = []
    for table in map(shard_table, shards):
        out += [
            row
            for (row,) in query(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?",
                (expression, CAP + 1 - len(out)),
            )
        ]
        if len(out) > CAP:
            break
    return out


def _ts_of(query: Query, chan: int, rows: Sequence[int]) -> dict[int, Stamp]:
    """The ts and sort key of those of ``rows`` that are channel ``chan``'s messages."""
    out: dict[int, Stamp] = {}
    for start in range(0, len(rows), _IDS_A_QUERY):
        part = rows[start : start + _IDS_A_QUERY]
        marks = ",".join("?" * len(part))
        # By primary key alone: "AND chan = ?" would let SQLite walk the channel's index.
        for row, ts, key, owner in query(
            f"SELECT id, ts, ts_key, chan FROM messages WHERE id IN ({marks})", part
        ):
            if owner == chan:
                out[int(row)] = (str(ts), int(key))
    return out


def _ranked(
    query: Query, chan: int, shards: Sequence[int], expression: str, limit: int
) -> list[Candidate]:
    """The best ``limit`` of ``expression``'s matches by bm25(): each shard's best, then the
    best of those (every match is scored: callers keep the matches few)."""
    rows: list[tuple[float, str]] = []
    for start in range(0, len(shards), _SHARDS_A_QUERY):
        parts = [
            f"SELECT m.ts, f.rank FROM (SELECT rowid, rank FROM {t} WHERE {t} MATCH ?1 "
            f"ORDER BY rank LIMIT {int(limit)}) f JOIN messages m ON m.id = f.rowid "
            "WHERE m.chan = ?2"
            for t in map(shard_table, shards[start : start + _SHARDS_A_QUERY])
        ]
        found = query(
            f"SELECT rank, ts FROM ({' UNION ALL '.join(parts)}) ORDER BY rank LIMIT {int(limit)}",
            (expression, chan),
        )
        rows.extend((float(rank), ts) for rank, ts in found)
    rows.sort()
    return [Candidate(ts, -rank) for rank, ts in rows[:limit]]
