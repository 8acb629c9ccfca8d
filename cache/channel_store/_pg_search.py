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
   the channel's newest :data:`SAMPLE` messages (a backward scan by key); the same statement
   turns the terms never seen into phrase queries and reads the channel's search version. A channel that small
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
sample's statement: it costs what it did with nothing kept. A channel still for
:data:`LEXEMES_AFTER` searches also keeps its sample's keys by lexeme (one statement, at
that version): a new word's sample matches are then looked up, and the statement a new word
costs is its conversion and the version read (the sample's scan and tests were 2-3 ms of it
at 1,000,000 messages); a phrase of several lexemes is still tested on the sample's rows.
"""

from __future__ import annotations

import math
import re
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

__all__ = ["DRIVE", "LARGE", "LEXEMES_AFTER", "OLDER", "SAMPLE", "PgSearch"]

SAMPLE = 2_000  # the newest messages each term's frequency is estimated on
DRIVE = 5_000  # the rows one search reads and scores, about
OLDER = 10  # candidates older than ``before`` offered in a large channel, at most
LARGE = 20_000  # a channel larger than this is large
FILL_SCAN = 50_000  # the newest messages looked at for common terms, at most
# Searches at one version before its sample's lexemes are read: the read costs some 40-50 ms
# at 1,000,000 messages and a new word's head 2-3 ms less after it, so it is for a channel
# whose version has held for a while (one still for ten searches tends to stay still).
LEXEMES_AFTER = 10
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
        lexemes_after: int = LEXEMES_AFTER,
    ) -> None:
        """``large``, ``sample``, ``drive``, ``lexemes_after``: :data:`LARGE`, :data:`SAMPLE`,
        :data:`DRIVE`, :data:`LEXEMES_AFTER` (smaller in tests, so a small channel takes every
        path)."""
        self._query = query
        self._large = large
        self._sample_size = sample
        self._drive = drive
        self._lexemes_after = lexemes_after
        self._sizes = ChannelSizes(query, clock)
        self._known: dict[str, str] = {}  # term -> its tsquery as text ("" for stop words)
        self.cache = cache

    def candidates(
        self, chan: int, terms: Sequence[str], limit: int, *, before: int | None = None
    ) -> list[Candidate]:
        if limit <= 0:
            return []
        wanted = list(dict.fromkeys(t for t in terms if any(c.isalnum() for c in t)))
        if not wanted or self._phrases(wanted) == []:
            return []
        if self.cache is None:
            _, phrases, sample = self._whole_head(chan, wanted, version=False)
            plan = self._plan(chan, phrases, sample, limit, before) if phrases else None
            return [] if plan is None else self._scored(chan, plan, _mean(sample), plan.limit)
        return self._remembered(self.cache, chan, wanted, limit, before)

    def _remembered(
        self, cache: SearchCache, chan: int, wanted: list[str], limit: int, before: int | None
    ) -> list[Candidate]:
        """``candidates`` from what was read before at the channel's version, reading what is
        missing (``_pg_search_cache``). A channel whose version moved since its last search
        (an ingest-heavy one moves every commit) is searched by the statement, as with no
        cache, its version read in the sample's statement: it costs what it did."""
        pieces = cache.get(chan)
        phrases = self._phrases(wanted)
        kept: Sample | None = None
        if pieces is not None and not pieces.moving and phrases is not None:
            with cache.lock:
                kept = _kept_sample(pieces, phrases)
        if pieces is not None and kept is not None and phrases is not None:
            sample = kept
            version = _version(*self._query(VERSION, [chan])[0])
            if version != pieces.version:  # the kept sample is another version's
                pieces = cache.start(chan, version, moving=True)
                _, phrases, sample = self._whole_head(chan, wanted, version=False)
        else:  # the version, the sample and the terms never converted in one statement
            got = None
            if pieces is not None and not pieces.moving and pieces.lexemes is not None:
                shape = pieces.sample or (0, 0.0)
                local = (*shape, pieces.lexemes)
                got = self._head(chan, wanted, version=True, local=local)
                if got is not None and got[0] != pieces.version:
                    got = None  # moved: the lexemes kept are another version's
            read, phrases, sample = got or self._whole_head(chan, wanted, version=True)
            assert read is not None  # asked for
            version = read
            if pieces is None or pieces.moving:
                if pieces is None or pieces.version != version:
                    pieces = cache.start(chan, version, moving=pieces is not None)
                else:
                    pieces.moving = False  # still at the version it moved to: keep reads now
            elif version != pieces.version:
                pieces = cache.start(chan, version, moving=True)
        if not phrases:
            return []
        with cache.lock:
            pieces.sample = (sample.rows, sample.mean_length)
            pieces.hits.update(zip(phrases, sample.keys, strict=True))
            pieces.searches += 1
            lexemes = not pieces.moving and pieces.searches == self._lexemes_after
        if lexemes:  # still for a few searches: its sample's words are worth keeping
            self._keep_lexemes(cache, chan, pieces)
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

    def _phrases(self, wanted: Sequence[str]) -> list[str] | None:
        """Each term's phrase query (``phraseto_tsquery``) as text, a term of stop words only
        (no lexeme) left out; None while a term was never converted (:meth:`_head` does)."""
        if any(t not in self._known for t in wanted):
            return None
        return list(dict.fromkeys(q for q in (self._known[t] for t in wanted) if q))

    def _head(
        self, chan: int, wanted: Sequence[str], *, version: bool, local: Local | None = None
    ) -> tuple[Version | None, list[str], Sample] | None:
        """One statement: the terms never seen turned into phrase queries, the channel's
        search version (``version``), and every term tested on the channel's newest SAMPLE
        messages (the keys that hold it: a pair's count is the two sets' intersection). Each
        of the three had been a round trip of its own, and most questions bring a new word.

        ``local``: the sample's shape and its keys by lexeme, kept at the version the caller
        expects; a phrase of one lexeme (a word's) is looked up there, not tested on the
        rows. None: a term turned out a phrase of several lexemes (ask again without)."""
        unknown = [t for t in wanted if t not in self._known]
        known = list(dict.fromkeys(q for t in wanted if (q := self._known.get(t))))
        tested = [local is None or _lexeme(q) is None for q in known]
        tested += [local is None or _SPLITS.search(t) is not None for t in unknown]
        sql, args = head_statement(chan, known, unknown, self._sample_size, version, tested)
        row = self._query(sql, args)[0]
        at = _version(row[0], row[1]) if version else None
        row = row[2:] if version else row
        shape: tuple[int, float] = local[:2] if local is not None else (0, 0.0)
        if any(tested):
            shape, row = (int(row[0]), float(row[1] or 0.0)), row[2:]
        count = sum(tested)
        texts = [str(q) for q in row[count:]]
        made = [*known, *texts]
        keys: dict[str, frozenset[int]] = {}
        found = iter(row[:count])
        for text, test in zip(made, tested, strict=True):
            if test:
                keys.setdefault(text, frozenset(next(found) or ()))
        of = {t: self._known[t] for t in wanted if t in self._known} | dict(
            zip(unknown, texts, strict=True)
        )
        if len(self._known) + len(unknown) > _KNOWN_TERMS:
            self._known.clear()
        self._known.update(zip(unknown, texts, strict=True))
        phrases = list(dict.fromkeys(q for q in (of[t] for t in wanted) if q))
        for phrase in phrases:
            if phrase not in keys:
                lexeme = _lexeme(phrase)
                if local is None or lexeme is None:
                    return None
                keys[phrase] = local[2].get(lexeme, frozenset())
        sample = Sample(*shape, keys=[keys[p] for p in phrases])
        return at, phrases, sample

    def _whole_head(
        self, chan: int, wanted: Sequence[str], *, version: bool
    ) -> tuple[Version | None, list[str], Sample]:
        """:meth:`_head` testing every phrase on the sample's rows."""
        got = self._head(chan, wanted, version=version)
        assert got is not None  # nothing is looked up
        return got

    def _keep_lexemes(self, cache: SearchCache, chan: int, pieces: Pieces) -> None:
        """The sample's keys by lexeme, kept in ``pieces`` if read at their version: a new
        word's sample matches are then looked up (:meth:`_head`), not tested on the rows."""
        rows = self._query(lexemes_statement(self._sample_size), [chan, chan])
        if rows and _version(rows[0][0], rows[0][1]) == pieces.version:
            with cache.lock:
                pieces.lexemes = {str(r[2]): frozenset(r[3]) for r in rows}


def head_statement(
    chan: int, known: Sequence[str], unknown: Sequence[str], size: int, version: bool,
    tested: Sequence[bool],
) -> tuple[str, list[Any]]:  # fmt: skip
    """:meth:`PgSearch._head`'s statement: the phrase queries (``known``: their text;
    ``unknown``: terms to convert, their text returned last) computed once in ``q``, the
    channel's search version first when ``version`` (read in the same snapshot,
    ``_pg_search_cache``), then, if any query is ``tested``, the sample's size and mean length
    and each tested query's sample keys."""
    made = [PHRASE for _ in known] + [f"phraseto_tsquery('{TS_CONFIG}', %s)" for _ in unknown]
    queries = ", ".join(f"{e} AS q{n}" for n, e in enumerate(made))
    texts = ", ".join(f"(SELECT q{n}::text FROM q)" for n in range(len(known), len(made)))
    head = [VERSION_COLUMNS] if version else []
    args: list[Any] = [*known, *unknown, *([chan] if version else [])]
    if not any(tested):
        columns = ", ".join([*head, *([texts] if texts else [])])
        return f"WITH q AS MATERIALIZED (SELECT {queries}) SELECT {columns}", args
    keys = [
        f"array_agg(s.ts_key) FILTER (WHERE s.doc @@ q.q{n})"
        for n, test in enumerate(tested)
        if test
    ]
    columns = ", ".join(
        [*head, "count(*)", "avg(length(s.doc))", *keys, *([texts] if texts else [])]
    )
    sql = (
        f"WITH q AS MATERIALIZED (SELECT {queries}) SELECT {columns} FROM (SELECT ts_key, doc "
        f"FROM messages WHERE chan = %s AND doc IS NOT NULL ORDER BY ts_key DESC "
        f"LIMIT {int(size)}) s, q"
    )
    return sql, [*args, chan]


def lexemes_statement(size: int) -> str:
    """The sample's rows by lexeme, the channel's search version first (on every row,
    computed once) and two ``chan`` arguments."""
    return (
        f"SELECT {VERSION_COLUMNS}, u.lexeme, array_agg(s.ts_key) FROM (SELECT ts_key, doc "
        f"FROM messages WHERE chan = %s AND doc IS NOT NULL ORDER BY ts_key DESC "
        f"LIMIT {int(size)}) s, unnest(s.doc) u GROUP BY u.lexeme"
    )


# A term holding none of these is taken for one lexeme (a word, a version, a number): its
# sample matches are looked up; a term that turns out several (a phrase) is asked again.
_SPLITS = re.compile(r"[-_'\s/]")
_ONE_LEXEME = re.compile(r"'((?:[^'\\]|''|\\\\)*)'")

Local = tuple[int, float, dict[str, frozenset[int]]]


def _lexeme(phrase: str) -> str | None:
    """The lexeme of a phrase query of one lexeme (``'bill'``); None for any other."""
    found = _ONE_LEXEME.fullmatch(phrase)
    return None if found is None else found.group(1).replace("''", "'").replace("\\\\", "\\")


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
