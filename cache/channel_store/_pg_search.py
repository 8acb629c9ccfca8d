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
best ten offered (docs/design.md, "The channel store on PostgreSQL"). A smaller channel's older
part is soon pulled whole (the caller keeps what it pulled), so it gets what it asks for.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from chanctx.cache.channel_store._pg_schema import TS_CONFIG
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
# A term's tsquery is sent as a constant: a function call in a statement would be evaluated
# again for every row it is tested on (phraseto_tsquery is not folded into a constant there).
_PHRASE = "%s::tsquery"
_KNOWN_TERMS = 10_000  # tsqueries remembered (the words people ask about repeat)

Query = Callable[[str, Sequence[Any]], list[TupleRow]]


@dataclass(frozen=True, slots=True)
class _Sample:
    rows: int  # messages in the sample (fewer than SAMPLE: the whole channel)
    mean_length: float  # lexemes a message
    hits: list[int]  # per term
    pairs: dict[tuple[int, int], int]  # per pair of terms (i < j)


@dataclass(slots=True)
class _Plan:
    """Which rows one search reads, and the weights it scores them with."""

    phrases: list[str]
    rare: list[int]  # terms counted exactly on the rows read
    weights: list[float]  # the estimated IDF of each term (used for the common ones)
    size: int  # live messages in the channel
    drive: list[str] = field(default_factory=list)  # tsquery parts OR-ed: every row read
    drive_args: list[str] = field(default_factory=list)
    fill: list[str] = field(default_factory=list)  # common terms: their newest rows
    fill_scan: int = 0  # the newest messages the fill looks at, at most
    before: int | None = None  # only rows older than this key are offered


class PgSearch:
    """The search half of the PostgreSQL store's reads: ``query`` runs one statement."""

    def __init__(
        self, query: Query, clock: Callable[[], float] = time.monotonic, *, large: int = LARGE
    ) -> None:
        self._query = query
        self._large = large
        self._sizes = ChannelSizes(query, clock)
        self._known: dict[str, str] = {}  # term -> its tsquery as text ("" for stop words)

    def candidates(
        self, chan: int, terms: Sequence[str], limit: int, *, before: int | None = None
    ) -> list[Candidate]:
        if limit <= 0:
            return []
        phrases = self._tsqueries(terms)
        if not phrases:
            return []
        sample = self._sample(chan, phrases)
        if sample.rows == 0:
            return []
        size = sample.rows if sample.rows < SAMPLE else self._sizes.size(chan)
        if before is not None and size > self._large:
            limit = min(limit, OLDER)  # each answer would pull its older matches anew
        scale = size / sample.rows
        estimate = [h * scale for h in sample.hits]
        # Terms read whole, rarest first, while the rows fit DRIVE (all of them in a channel
        # the sample covered); their frequencies are then counted exactly.
        whole: list[int] = []
        budget = 0.0
        for n in sorted(range(len(phrases)), key=lambda n: estimate[n]):
            if sample.rows < SAMPLE or budget + estimate[n] <= DRIVE:
                whole.append(n)
                budget += estimate[n]
        plan = _Plan(phrases, whole, [idf(size, e) for e in estimate], size, before=before)
        plan.drive = [_PHRASE for _ in whole]
        plan.drive_args = [phrases[n] for n in whole]
        common = [n for n in range(len(phrases)) if n not in whole]
        for i, j in sorted(combinations(common, 2), key=lambda p: sample.pairs[p]):
            joint = sample.pairs[(i, j)] * scale
            if budget + joint > DRIVE:
                break
            plan.drive.append(f"({_PHRASE} && {_PHRASE})")
            plan.drive_args += [phrases[i], phrases[j]]
            budget += joint
        if common:  # the newest messages holding a common term take what is left
            plan.fill = [phrases[n] for n in common]
            share = max(sample.hits[n] for n in common) / sample.rows
            plan.fill_scan = min(FILL_SCAN, max(4 * limit, int(2 * limit / max(share, 1e-9))))
        return self._scored(chan, plan, max(sample.mean_length, 1.0), limit)

    def _scored(self, chan: int, plan: _Plan, mean_length: float, limit: int) -> list[Candidate]:
        """One statement: read the rows the plan names (at most DRIVE, and ``limit`` more of
        the fill), count the rare terms' frequencies among them, score, keep the best."""
        k = len(plan.phrases)
        columns = "ts_key, ts, length(doc) AS len, " + ", ".join(
            f"doc @@ {_PHRASE} AS h{n}" for n in range(k)
        )
        parts: list[str] = []
        args: list[Any] = []
        if plan.drive:
            parts.append(
                f"(SELECT {columns} FROM messages WHERE chan = %s "
                f"AND doc @@ ({' || '.join(plan.drive)}) LIMIT {DRIVE})"
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
                f"WHERE doc @@ ({' || '.join(_PHRASE for _ in plan.fill)}) LIMIT {int(limit)})"
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

    def _sample(self, chan: int, phrases: list[str]) -> _Sample:
        """Every term and pair of terms tested on the channel's newest SAMPLE messages."""
        pairs = list(combinations(range(len(phrases)), 2))
        singles = ", ".join(f"count(*) FILTER (WHERE doc @@ {_PHRASE})" for _ in phrases)
        both = "".join(f", count(*) FILTER (WHERE doc @@ ({_PHRASE} && {_PHRASE}))" for _ in pairs)
        row = self._query(
            f"SELECT count(*), avg(length(doc)), {singles}{both} FROM (SELECT doc FROM messages "
            f"WHERE chan = %s AND doc IS NOT NULL ORDER BY ts_key DESC LIMIT {SAMPLE}) s",
            [*phrases, *[p for i, j in pairs for p in (phrases[i], phrases[j])], chan],
        )[0]
        k = len(phrases)
        return _Sample(
            rows=int(row[0]),
            mean_length=float(row[1] or 0.0),
            hits=[int(h) for h in row[2 : 2 + k]],
            pairs={p: int(h) for p, h in zip(pairs, row[2 + k :], strict=True)},
        )


def idf(size: int, df: float) -> float:
    """BM25's inverse document frequency (always positive), as the statement computes it."""
    return math.log(1 + (size - df + 0.5) / (df + 0.5))
