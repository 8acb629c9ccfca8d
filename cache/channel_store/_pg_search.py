"""``search_candidates`` on PostgreSQL: the messages of a channel worth ranking for some terms.

Each term becomes a phrase query of its words (``phraseto_tsquery``, so "checkout-api" finds the
two words side by side and no term can inject query syntax). A message's score is BM25's with
every term counted once (chat messages are short; a term seldom repeats): the sum of the inverse
document frequencies of the terms it holds, damped mildly by its length (k1 = 1.2, b = 0.4, the
in-memory ranking's constants), ties to the newer message.

What it costs is the heap rows it reads (the GIN index gives row ids, not counts or scores), so
it reads few (``EXPLAIN ANALYZE`` and timings in docs/design.md, "The channel store on
PostgreSQL"):

1. *Frequencies from a sample.* One query tests every term, and every pair of terms, against
   the channel's newest :data:`SAMPLE` messages (a backward scan by key). A channel that small
   is counted exactly; in a larger one the share of the sample estimates each term's document
   frequency; the channel's size is ``_pg_sizes``' (counted every few minutes, never on an
   answer's path once the channel is large).
2. *What to read.* Terms are read whole, rarest first, while their estimated rows fit
   :data:`DRIVE`; their frequencies are then counted exactly on the rows read. Of the rest
   (common terms), pairs are intersected inside the GIN index (``a && b``, rarest pair first)
   while they fit, and the newest ``limit`` messages holding a common term fill in (a backward
   scan of at most :data:`FILL_SCAN` messages, never the GIN index).
3. One statement reads those rows, counts, scores and keeps the best ``limit``.

``before`` (the caller's index holds that message and every newer one): the same rows are read
and scored (so the rare terms' counts stay exact), the fill scans backwards from ``before``, and
only older rows are kept. In a channel of more than :data:`LARGE` messages at most :data:`OLDER`
of them: each one offered costs the caller a fetch and tokenising before it ranks, anew every
answer, and at 1,000,000 messages the ranking's top 10 took older messages almost only from the
best ten offered (docs/design.md, "The channel store on PostgreSQL"). There no pair of common
terms is intersected: the rare terms' rows and the fill from ``before`` offer those few, and a
pair's intersection (10-15 ms at 1,000,000 messages, most of such a search) changed no answer
for the better. A smaller channel's older part is soon pulled whole (the caller keeps what it
pulled), so it gets what it asks for, from every part.

*Kept reads* (``cache``: a :class:`SearchCache`, the store's default). What steps 1-3 read is
kept per term while the channel's search version holds, and a question made of words read
before is answered from it with the statement's arithmetic (``_pg_search_cache``): one
statement, the version read. A channel whose version moved since its previous search (one
written between every two searches) is searched by the statements, its version read in the
sample's statement: it costs what it did with nothing kept.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from itertools import combinations
from typing import Any

from chanctx.cache.channel_store._pg_schema import TS_CONFIG
from chanctx.cache.channel_store._pg_search_cache import (
    Pieces,
    SearchCache,
    Version,
    assembled,
    keep,
    parts_statement,
    scored,
)
from chanctx.cache.channel_store._pg_search_plan import PHRASE, Plan, Sample
from chanctx.cache.channel_store._pg_sizes import ChannelSizes
from chanctx.cache.channel_store._records import Candidate
from psycopg.rows import TupleRow

__all__ = ["DRIVE", "LARGE", "OLDER", "SAMPLE", "PgSearch"]

SAMPLE = 2_000  # the newest messages each term's frequency is estimated on
DRIVE = 5_000  # the rows one search reads and scores, about
OLDER = 10  # candidates older than ``before`` offered in a large channel, at most
LARGE = 20_000  # a channel larger than this is large
FILL_SCAN = 50_000  # the newest messages looked at for common terms, at most
_K1, _B = 1.2, 0.4
_KNOWN_TERMS = 10_000  # tsqueries remembered (the words people ask about repeat)

Query = Callable[[str, Sequence[Any]], list[TupleRow]]


class PgSearch:
    """The search half of the PostgreSQL store's reads: ``query`` runs one statement;
    ``cache`` keeps what searches read (None: every search reads everything anew)."""

    def __init__(
        self,
        query: Query,
        clock: Callable[[], float] = time.monotonic,
        *,
        large: int = LARGE,
        sample: int = SAMPLE,
        drive: int = DRIVE,
        cache: SearchCache | None = None,
    ) -> None:
        """``large``, ``sample``, ``drive``: :data:`LARGE`, :data:`SAMPLE`, :data:`DRIVE`
        (smaller in tests, so a small channel takes every path)."""
        self._query = query
        self._large = large
        self._sample_size = sample
        self._drive = drive
        self._sizes = ChannelSizes(query, clock)
        self._known: dict[str, str] = {}  # term -> its tsquery as text ("" for stop words)
        self.cache = cache

    def candidates(
        self, chan: int, terms: Sequence[str], limit: int, *, before: int | None = None
    ) -> list[Candidate]:
        if limit <= 0:
            return []
        phrases = self._tsqueries(terms)
        if not phrases:
            return []
        if self.cache is None:
            sample = self._sample(chan, phrases)
            plan = self._plan(chan, phrases, sample, limit, before)
            return [] if plan is None else self._scored(chan, plan, _mean(sample), plan.limit)
        return self._remembered(self.cache, chan, phrases, limit, before)

    def _remembered(
        self, cache: SearchCache, chan: int, phrases: list[str], limit: int, before: int | None
    ) -> list[Candidate]:
        """``candidates`` from what was read before at the channel's version, reading what is
        missing (``_pg_search_cache``). A channel whose version moved since its last search
        (an ingest-heavy one moves every commit) is searched by the statement, as with no
        cache, its version read in the sample's statement: it costs what it did."""
        pieces = cache.get(chan)
        sample: Sample | None = None
        if pieces is None or pieces.moving:
            statement = sample_statement(chan, phrases, self._sample_size, version=True)
            row = self._query(*statement)[0]
            version = _version(row[0], row[1])
            sample = sample_of(row[2:], len(phrases))
            if pieces is None or pieces.version != version:
                pieces = cache.start(chan, version, moving=pieces is not None)
            else:
                pieces.moving = False  # still at the version it moved to: keep reads now
        else:
            version = _version(*self._query(VERSION, [chan])[0])
            if version != pieces.version:
                pieces = cache.start(chan, version, moving=True)
        with cache.lock:
            if sample is None:
                sample = _kept_sample(pieces, phrases)
        if sample is None:
            sample = self._sample(chan, phrases)
        with cache.lock:
            pieces.sample = (sample.rows, sample.mean_length)
            pieces.hits.update(zip(phrases, sample.keys, strict=True))
        plan = self._plan(chan, phrases, sample, limit, before)
        if plan is None:
            return []
        if pieces.moving:
            return self._scored(chan, plan, _mean(sample), plan.limit)
        with cache.lock:
            rows, need = assembled(pieces, plan)
        if need:
            found = self._query(*parts_statement(chan, plan, need))
            with cache.lock:
                keep(pieces, plan, need, found)
                rows, need = assembled(pieces, plan)
            cache.trim(chan, pieces)
        if rows is None or need:  # more than DRIVE rows read whole: the statement decides
            return self._scored(chan, plan, _mean(sample), plan.limit)
        with cache.lock:
            ts = pieces.ts
        return scored(
            rows.keys, rows.lengths, rows.matches, plan.rare, plan.weights, plan.size,
            _mean(sample), plan.limit, plan.before, ts,
        )  # fmt: skip

    def _plan(
        self, chan: int, phrases: list[str], sample: Sample, limit: int, before: int | None
    ) -> Plan | None:
        """What to read for ``phrases`` (the module docstring's steps 1-2); None: nothing."""
        if sample.rows == 0:
            return None
        whole_channel = sample.rows < self._sample_size
        size = sample.rows if whole_channel else self._sizes.size(chan)
        older = before is not None and size > self._large
        if older:
            limit = min(limit, OLDER)  # each answer would pull its older matches anew
        scale = size / sample.rows
        estimate = [h * scale for h in sample.hits]
        # Terms read whole, rarest first, while the rows fit DRIVE (all of them in a channel
        # the sample covered); their frequencies are then counted exactly.
        whole: list[int] = []
        budget = 0.0
        for n in sorted(range(len(phrases)), key=lambda n: estimate[n]):
            if whole_channel or budget + estimate[n] <= self._drive:
                whole.append(n)
                budget += estimate[n]
        weights = [idf(size, e) for e in estimate]
        plan = Plan(phrases, whole, weights, size, limit, self._drive, before=before)
        common = [n for n in range(len(phrases)) if n not in whole]
        # A large channel's few older candidates come from the fill: a pair's intersection in
        # the GIN index was most of such a search and did not make its answers better.
        pairs: Iterable[tuple[int, int]] = () if older else combinations(common, 2)
        for i, j in sorted(pairs, key=lambda p: sample.pair(*p)):
            joint = sample.pair(i, j) * scale
            if budget + joint > self._drive:
                break
            plan.pairs.append((i, j))
            budget += joint
        if common:  # the newest messages holding a common term take what is left
            plan.common = common
            share = max(sample.hits[n] for n in common) / sample.rows
            plan.fill_scan = min(FILL_SCAN, max(4 * limit, int(2 * limit / max(share, 1e-9))))
        return plan

    def _scored(self, chan: int, plan: Plan, mean_length: float, limit: int) -> list[Candidate]:
        """One statement: read the rows the plan names (at most DRIVE, and ``limit`` more of
        the fill), count the rare terms' frequencies among them, score, keep the best."""
        k = len(plan.phrases)
        columns = "ts_key, ts, length(doc) AS len, " + ", ".join(
            f"doc @@ {PHRASE} AS h{n}" for n in range(k)
        )
        parts: list[str] = []
        args: list[Any] = []
        if plan.drive:
            parts.append(
                f"(SELECT {columns} FROM messages WHERE chan = %s "
                f"AND doc @@ ({' || '.join(plan.drive)}) LIMIT {int(plan.cap)})"
            )
            args += [*plan.phrases, chan, *plan.drive_args]
        if plan.fill:
            # Newest first by the key, never through the GIN index: the planner's estimate
            # of a phrase's matches can be off by hundreds, and a bitmap of a common term's
            # every match sorted by time is what this part exists to avoid.
            older = "" if plan.before is None else " AND ts_key < %s"
            parts.append(
                f"(SELECT {columns} FROM (SELECT ts_key, ts, doc FROM messages WHERE chan = %s"
                f"{older} ORDER BY ts_key DESC LIMIT {int(plan.fill_scan)}) newest "
                f"WHERE doc @@ ({' || '.join(PHRASE for _ in plan.fill)}) LIMIT {int(limit)})"
            )
            args += [*plan.phrases, chan, *([] if plan.before is None else [plan.before])]
            args += plan.fill
        if not parts:
            return []
        # The weights are computed once (in ``f``), the score of a row from them and its flags.
        weights = [
            f"ln(1 + (%s::float8 - count(*) FILTER (WHERE h{n}) + 0.5) / "
            f"(count(*) FILTER (WHERE h{n}) + 0.5)) AS w{n}"
            if n in plan.rare  # counted exactly: every row holding it was read
            else f"%s::float8 AS w{n}"
            for n in range(k)
        ]
        args += [float(plan.size) if n in plan.rare else plan.weights[n] for n in range(k)]
        args.append(mean_length)
        terms = " + ".join(f"f.w{n} * m.h{n}::int" for n in range(k))
        norm = f"{1 + _K1}::float8 / (1 + {_K1}::float8 * ({1 - _B} + {_B} * m.len / %s::float8))"
        older = ""
        if plan.before is not None:  # the rare terms' rows are all read: their counts hold
            older = "WHERE m.ts_key < %s "
            args.append(plan.before)
        sql = (
            f"WITH m AS MATERIALIZED ({' UNION '.join(parts)}), "
            f"f AS (SELECT count(*) AS read, {', '.join(weights)} FROM m) "  # one row
            f"SELECT m.ts, ({terms}) * {norm} AS score FROM m, f {older}"
            f"ORDER BY score DESC, m.ts_key DESC LIMIT {int(limit)}"
        )
        return [Candidate(str(ts), float(score)) for ts, score in self._query(sql, args)]

    def _tsqueries(self, terms: Sequence[str]) -> list[str]:
        """Each term's phrase query (``phraseto_tsquery``) as text, once per term; a term of
        stop words only (no lexeme) is left out."""
        wanted = list(dict.fromkeys(t for t in terms if any(c.isalnum() for c in t)))
        unknown = [t for t in wanted if t not in self._known]
        if unknown:
            if len(self._known) + len(unknown) > _KNOWN_TERMS:
                self._known.clear()
            calls = ", ".join(f"phraseto_tsquery('{TS_CONFIG}', %s)::text" for _ in unknown)
            row = self._query(f"SELECT {calls}", unknown)[0]
            self._known.update(zip(unknown, (str(q) for q in row), strict=True))
        return list(dict.fromkeys(q for q in (self._known[t] for t in wanted) if q))

    def _sample(self, chan: int, phrases: Sequence[str]) -> Sample:
        """Every term tested on the channel's newest SAMPLE messages (the keys that hold it:
        a pair's count is the two sets' intersection)."""
        statement = sample_statement(chan, phrases, self._sample_size)
        return sample_of(self._query(*statement)[0], len(phrases))


def sample_statement(
    chan: int, phrases: Sequence[str], size: int, version: bool = False
) -> tuple[str, list[Any]]:
    """The sample's statement; ``version``: the channel's search version first, read in the
    same snapshot (``_pg_search_cache``)."""
    keys = "".join(f", array_agg(ts_key) FILTER (WHERE doc @@ {PHRASE})" for _ in phrases)
    head = f"{VERSION_COLUMNS}, " if version else ""
    sql = (
        f"SELECT {head}count(*), avg(length(doc)){keys} FROM (SELECT ts_key, doc FROM messages "
        f"WHERE chan = %s AND doc IS NOT NULL ORDER BY ts_key DESC LIMIT {int(size)}) s"
    )
    return sql, [*([chan] if version else []), *phrases, chan]


def sample_of(row: Sequence[Any], terms: int) -> Sample:
    return Sample(
        rows=int(row[0]),
        mean_length=float(row[1] or 0.0),
        keys=[frozenset(k or ()) for k in row[2 : 2 + terms]],
    )


def _mean(sample: Sample) -> float:
    return max(sample.mean_length, 1.0)


VERSION_COLUMNS = (
    "(SELECT max(seq) FROM messages WHERE chan = %s), (SELECT removed FROM schema_version)"
)
VERSION = f"SELECT {VERSION_COLUMNS}"


def _version(seq: int | None, removed: int) -> Version:
    return (-1 if seq is None else int(seq), int(removed))


def _kept_sample(pieces: Pieces, phrases: Sequence[str]) -> Sample | None:
    if pieces.sample is None or any(p not in pieces.hits for p in phrases):
        return None
    rows, mean = pieces.sample
    return Sample(rows, mean, [pieces.hits[p] for p in phrases])


def idf(size: int, df: float) -> float:
    """BM25's inverse document frequency (always positive), as the statement computes it."""
    return math.log(1 + (size - df + 0.5) / (df + 0.5))
