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

The caller ranks them with every signal it has; what changes against scoring every match is
only which of many common-word matches reach it: the newest, not the shortest anywhere in the
channel. A message holding a common word beyond its newest :data:`CAP` matches counts only the
rare words it holds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
from chanctx.cache.channel_store._fts import SHARD_BITS, shard_table
from chanctx.cache.channel_store._records import Candidate

__all__ = ["CAP", "SCORED", "candidates"]

CAP = 2_000  # row ids read a term, at most (one more tells a common term)
SCORED = 200  # matches bm25() ranks, at most (each call reads the row's length)
_SHARDS_A_QUERY = 100  # a compound SELECT holds at most 500 (SQLite's default limit)
_IDS_A_QUERY = 900  # bound parameters a statement, under SQLite's old default of 999

Query = Callable[[str, Sequence[Any]], list[Any]]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def candidates(
    query: Query, chan: int, shards: Sequence[int], phrases: Sequence[str], limit: int
) -> list[Candidate]:
    """The best ``limit`` messages of channel ``chan`` for any of ``phrases`` (FTS5 phrase
    queries of the channel's scoped terms), read as the module docstring says."""
    newest_first = sorted(shards, reverse=True)
    found = [_row_ids(query, newest_first, phrase) for phrase in phrases]
    matched: set[int] = set().union(*found)
    if all(len(ids) <= CAP for ids in found) and len(matched) <= SCORED:
        return _ranked(query, chan, newest_first, " OR ".join(phrases), limit)
    # Any row count above every term's: the shards the channel has words in hold at most this.
    size = max(len(newest_first) << SHARD_BITS, max(map(len, found)) + 1)
    rows, score = _scored(found, size)
    # Best score first, ties to the newer (larger) row id.
    best = [int(row) for row in rows[np.lexsort((-rows, -score))[:limit]]]
    score_of = dict(zip(rows.tolist(), score.tolist(), strict=True))
    ts_of = _ts_of(query, chan, best)
    return [Candidate(ts_of[row], score_of[row]) for row in best if row in ts_of]


def _scored(found: Sequence[list[int]], size: int) -> tuple[IntArray, FloatArray]:
    """(every row read, ascending; its score): the sum of the weights of the terms that read
    it, added in term order from 0.0 (``bincount`` adds its weights in input order), as a
    per-row loop would."""
    weights: list[float] = []
    for ids in found:
        df = max(len(ids), CAP + 1) if len(ids) > CAP else len(ids)
        weights.append(math.log(1.0 + (size - df + 0.5) / (df + 0.5)))
    read = np.fromiter(chain.from_iterable(found), dtype=np.int64, count=sum(map(len, found)))
    each = np.repeat(np.array(weights, dtype=np.float64), [len(ids) for ids in found])
    rows, where = np.unique(read, return_inverse=True)
    score: FloatArray = np.bincount(where, weights=each, minlength=len(rows)).astype(np.float64)
    return rows, score


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


def _ts_of(query: Query, chan: int, rows: Sequence[int]) -> dict[int, str]:
    """The ts of those of ``rows`` that are channel ``chan``'s messages."""
    out: dict[int, str] = {}
    for start in range(0, len(rows), _IDS_A_QUERY):
        part = rows[start : start + _IDS_A_QUERY]
        marks = ",".join("?" * len(part))
        # By primary key alone: "AND chan = ?" would let SQLite walk the channel's index.
        for row, ts, owner in query(
            f"SELECT id, ts, chan FROM messages WHERE id IN ({marks})", part
        ):
            if owner == chan:
                out[int(row)] = str(ts)
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
