"""What ``search_candidates`` on PostgreSQL read before, kept per channel and per term while
the channel's search version holds, and the answer computed from it as the database would.

A search's statements (``_pg_search``) read, for its terms: each term's matches among the
channel's newest messages (the frequency sample), the whole matching rows of its rare terms
and of some pairs of common terms, and the newest rows holding a common term (the fill). Each
is a fact about one term (or one pair) and the channel, not about the question, and the words
people ask about recur across questions even when the questions do not: a service's name,
"deploy", "timeout". So each is kept on its own (:class:`Pieces`): a term's sample matches; a
term's or a pair's rows (:class:`Keyed`: keys, lexeme counts, and for each term asked with
them so far which rows hold it); a common term's newest matches with their positions in the
backward scan (:class:`Fill`). A question made of known words is answered here with no
statement but the version read (:func:`assembled`, :func:`scored`): the same rows, the rare
terms counted on them, every score computed with the statement's float8 operations in its
order, so the answer is the statement's (tested against a search that keeps nothing).

A question that needs something not kept reads only that, in one statement
(:func:`parts_statement`, :func:`keep`): a term or pair never read whole, or read with other
common terms than the question's (read again, with them), and the fill when the kept ones do
not reach far enough (:func:`fill_rows`). More rows read whole than the statement's cap, which it
would cut arbitrarily, go to the statement.

*Versions.* Everything kept for a channel holds for one version, ``(max(seq), removed)``
(``_pg_schema``), read before any of it was read, so a write committed during a read leaves it
under a version no search sees again; another replica's write moves the version in the
database, so the next search everywhere reads anew.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from chanctx.cache.channel_store._pg_search_plan import PHRASE, Plan
from chanctx.cache.channel_store._records import Candidate
from psycopg.rows import TupleRow

__all__ = [
    "CHANNELS",
    "HELD",
    "ROWS",
    "Fill",
    "Keyed",
    "Need",
    "Pieces",
    "Read",
    "Rows",
    "SearchCache",
    "assembled",
    "fill_rows",
    "keep",
    "member",
    "pair_key",
    "parts_statement",
    "scored",
]

CHANNELS = 16  # channels whose reads are kept, least recently searched out first
HELD = 2_000_000  # keys in one channel's pieces, at most (about 10 bytes each)
ROWS = 200_000  # rows whose ts one channel keeps, at most (about 150 bytes each)
_K1, _B = 1.2, 0.4

Version = tuple[int, int]  # (the channel's max(seq), or -1; the store's removed count)
Keys = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


def member(keys: Keys, among: Keys) -> Bools:
    """Whether each of ``keys`` is in ``among`` (ascending): a binary search each, no sort."""
    if not len(among):
        return np.zeros(len(keys), dtype=np.bool_)
    at = np.minimum(np.searchsorted(among, keys), len(among) - 1)
    found: Bools = among[at] == keys
    return found


@dataclass(frozen=True, slots=True)
class Keyed:
    """Every row holding a term (or a pair of terms), ascending by key, with their lexeme
    counts and, for each term asked with it so far, whether each row holds it."""

    keys: Keys
    lengths: Keys
    flags: dict[str, Bools]

    def with_flags(self, older: Keyed | None) -> Keyed:
        """This read, with what ``older`` (the same rows read before) knew of other terms."""
        if older is not None and np.array_equal(older.keys, self.keys):
            return Keyed(self.keys, self.lengths, older.flags | self.flags)
        return self


@dataclass(frozen=True, slots=True)
class Read:
    """Rows a statement read: keys, ts, lexemes, and whether each holds each term asked
    (``matches[n]`` for term n)."""

    keys: Keys
    ts: list[str]
    lengths: Keys
    matches: Bools  # terms x rows

    @staticmethod
    def of(rows: Sequence[Sequence[object]], terms: int) -> Read:
        """From rows of (key, ts, lexemes, match of term 0, term 1, ...)."""
        keys = np.array([r[0] for r in rows], dtype=np.int64)
        lengths = np.array([r[2] or 0 for r in rows], dtype=np.int64)
        matches = np.array([r[3:] for r in rows], dtype=np.bool_).reshape(len(rows), terms)
        return Read(keys, [str(r[1]) for r in rows], lengths, matches.T)

    def only(self, keep: Bools, terms: Sequence[str]) -> Keyed:
        """The rows ``keep`` marks as a :class:`Keyed` (flags for ``terms``)."""
        order = np.argsort(self.keys[keep], kind="stable")
        flags = {t: self.matches[n][keep][order] for n, t in enumerate(terms)}
        return Keyed(self.keys[keep][order], self.lengths[keep][order], flags)


@dataclass(slots=True)
class Fill:
    """One common term's newest matches older than some ``before`` (positions count every
    row older than it, newest 1): every match at a position up to ``reach`` is here."""

    matches: list[tuple[int, int]]  # (position, ts key), newest first
    keys: Keys  # ascending
    reach: int


@dataclass(slots=True)
class Pieces:
    """The reads of one channel at one version."""

    version: Version
    moving: bool = False  # the version differed from the one before: read, do not keep rows
    sample: tuple[int, float] | None = None  # (rows, mean lexemes) of the frequency sample
    hits: dict[str, frozenset[int]] = field(default_factory=dict)  # term -> sample keys
    ts: dict[int, str] = field(default_factory=dict)  # key -> ts of every row read
    lengths: dict[int, int] = field(default_factory=dict)
    whole: dict[str, Keyed] = field(default_factory=dict)  # term -> every matching row
    pairs: dict[tuple[str, str], Keyed] = field(default_factory=dict)
    fills: dict[tuple[int | None, str], Fill] = field(default_factory=dict)
    held: int = 0  # keys in the pieces
    searches: int = 0  # searches answered at this version while it held
    lexemes: dict[str, frozenset[int]] | None = None  # the sample's keys by lexeme

    def keep(self, read: Read) -> None:
        """The ts and lexeme counts of rows a statement read."""
        keys = read.keys.tolist()
        self.ts.update(zip(keys, read.ts, strict=True))
        self.lengths.update(zip(keys, read.lengths.tolist(), strict=True))


class SearchCache:
    """:class:`Pieces` by channel, least recently searched out first. Thread-safe: the store's
    searches run on many threads; one channel's pieces are changed under the lock only."""

    def __init__(self, channels: int = CHANNELS, held: int = HELD) -> None:
        self.lock = threading.Lock()
        self._channels = channels
        self._held = held
        self._pieces: OrderedDict[int, Pieces] = OrderedDict()

    def get(self, chan: int) -> Pieces | None:
        with self.lock:
            found = self._pieces.get(chan)
            if found is not None:
                self._pieces.move_to_end(chan)
            return found

    def start(self, chan: int, version: Version, *, moving: bool) -> Pieces:
        """Fresh pieces for ``chan`` at ``version`` (what was kept at another is dropped)."""
        pieces = Pieces(version, moving=moving)
        with self.lock:
            self._pieces[chan] = pieces
            self._pieces.move_to_end(chan)
            while len(self._pieces) > self._channels:
                self._pieces.popitem(last=False)
        return pieces

    def trim(self, chan: int, pieces: Pieces) -> None:
        """Start the channel over when its pieces outgrew :data:`HELD` or its rows
        :data:`ROWS` (a channel's kept reads: some 50 MB at most)."""
        if pieces.held > self._held or len(pieces.ts) > ROWS:
            with self.lock:
                if self._pieces.get(chan) is pieces:
                    self._pieces[chan] = Pieces(pieces.version, moving=pieces.moving)

    def __len__(self) -> int:
        return len(self._pieces)


@dataclass(slots=True)
class Need:
    """What a search lacks (empty: it can be answered from the pieces)."""

    whole: list[int] = field(default_factory=list)  # terms whose every row to read
    pairs: list[tuple[int, int]] = field(default_factory=list)  # pairs whose rows to read
    fill: bool = False  # the common terms' newest rows

    def __bool__(self) -> bool:
        return bool(self.whole or self.pairs or self.fill)


def pair_key(phrases: Sequence[str], pair: tuple[int, int]) -> tuple[str, str]:
    a, b = phrases[pair[0]], phrases[pair[1]]
    return (a, b) if a <= b else (b, a)


def fill_rows(
    pieces: Pieces, phrases: Sequence[str], common: Sequence[int], scan: int, limit: int,
    before: int | None,
) -> list[tuple[int, int]] | None:  # fmt: skip
    """The fill's rows, (position, key) newest first, as the statement's backward scan of
    ``scan`` rows would find them; None when the kept fills do not reach far enough. Each
    kept fill holds every match of its term up to its reach, so the matches of all of them up
    to the nearest reach are all there are: the fill when they are ``limit`` or more, or when
    that reach is the scan's end."""
    if not common:
        return []
    fills = [pieces.fills.get((before, phrases[n])) for n in common]
    known = [f for f in fills if f is not None]
    if len(known) < len(fills):
        return None
    reach = min(scan, *(f.reach for f in known))
    found = sorted({m for f in known for m in f.matches if m[0] <= reach})
    if len(found) < limit and reach < scan:
        return None
    return found[:limit]


def scored(
    keys: Keys, lengths: Keys, matches: Bools, rare: Sequence[int], weights: Sequence[float],
    size: int, mean_length: float, limit: int, before: int | None, ts: dict[int, str],
) -> list[Candidate]:  # fmt: skip
    """The statement's answer from the rows it would read (``matches``: terms x rows): the
    rare terms' weights counted on them, every row's score, the best ``limit`` (ties to the
    newer). Each operation is the statement's, in its order, on the same doubles (``0.4 *
    len`` is exact in SQL's numeric: ``2 * len / 5`` rounds it once, as the cast to float8
    does; ``a * 2.2 / d`` is ``(a * 2.2) / d``)."""
    w = list(weights)
    for n in rare:
        count = int(matches[n].sum())
        w[n] = math.log(1 + (float(size) - count + 0.5) / (count + 0.5))
    total = w[0] * matches[0].astype(np.float64)
    for n in range(1, len(w)):
        total = total + w[n] * matches[n].astype(np.float64)
    damp = 1 + _K1 * ((1 - _B) + (2 * lengths) / 5 / mean_length)
    score = total * (1 + _K1) / damp
    if before is not None:
        older = keys < before
        keys, score = keys[older], score[older]
    best = np.lexsort((-keys, -score))[:limit]
    return [Candidate(ts[int(keys[i])], float(score[i])) for i in best]


@dataclass(frozen=True, slots=True)
class Rows:
    """The rows a search reads, ascending by key, and their matches (terms x rows)."""

    keys: Keys
    lengths: Keys
    matches: npt.NDArray[np.bool_]


_NO_KEYS: Keys = np.zeros(0, dtype=np.int64)


def assembled(pieces: Pieces, plan: Plan) -> tuple[Rows | None, Need]:
    """The rows the statement would read for ``plan``, with their matches, from ``pieces``;
    or what is missing (a term or pair never read whole, or read with other terms than a
    common one asked now). (None, empty): more than DRIVE rows, which the statement cuts."""
    phrases, before, need = plan.phrases, plan.before, Need()
    asked = [phrases[n] for n in plan.common]
    whole: dict[int, Keyed] = {}
    drive: list[Keyed] = []
    for n in plan.rare:
        every = pieces.whole.get(phrases[n])
        if every is None or any(t not in every.flags for t in asked):
            need.whole.append(n)
        else:
            whole[n] = every
            drive.append(every)
    for pair in plan.pairs:
        both = pieces.pairs.get(pair_key(phrases, pair))
        if both is None or any(t not in both.flags for t in asked):
            need.pairs.append(pair)
        else:
            drive.append(both)
    fill = fill_rows(pieces, phrases, plan.common, plan.fill_scan, plan.limit, before)
    need.fill = fill is None
    if need or fill is None:
        return None, need
    keys, where = np.unique(
        np.concatenate([d.keys for d in drive] or [_NO_KEYS]), return_index=True
    )
    lengths = np.concatenate([d.lengths for d in drive] or [_NO_KEYS])[where]
    if len(keys) > plan.cap:
        return None, Need()
    filled = np.array(sorted(k for _, k in fill), dtype=np.int64)
    extra = np.setdiff1d(filled, keys, assume_unique=True)
    keys = np.concatenate([keys, extra])
    more = [pieces.lengths[k] for k in extra.tolist()]
    lengths = np.concatenate([lengths, np.array(more, dtype=np.int64)])
    matches = np.zeros((len(phrases), len(keys)), dtype=np.bool_)
    for n in whole:
        matches[n] = member(keys, whole[n].keys)
    for n in plan.common:  # a drive row holds it if a piece holding the row says so
        for piece in drive:
            matches[n] |= member(keys, piece.keys[piece.flags[phrases[n]]])
        # The fill's rows are within every common term's kept fill.
        matches[n] |= member(keys, pieces.fills[(before, phrases[n])].keys) & member(keys, filled)
    return Rows(keys, lengths, matches), need


def parts_statement(chan: int, plan: Plan, need: Need) -> tuple[str, list[Any]]:
    """One statement reading what ``need`` names: the rows of the terms and pairs read whole
    (at most DRIVE + 1: more tells the cap was passed) and the fill, with every row's matches
    of every term asked."""
    phrases = plan.phrases
    columns = "ts_key, ts, length(doc), " + ", ".join(f"doc @@ {PHRASE}" for _ in phrases)
    parts: list[str] = []
    args: list[Any] = []
    if need.whole or need.pairs:
        drive = [PHRASE for _ in need.whole] + [f"({PHRASE} && {PHRASE})" for _ in need.pairs]
        parts.append(
            f"(SELECT 0, 0::bigint, {columns} FROM messages WHERE chan = %s "
            f"AND doc @@ ({' || '.join(drive)}) LIMIT {int(plan.cap) + 1})"
        )
        args += [*phrases, chan, *(phrases[n] for n in need.whole)]
        args += [phrases[k] for pair in need.pairs for k in pair]
    older = "" if plan.before is None else " AND ts_key < %s"
    if need.fill:  # the statement's fill, each row with its position in the backward scan
        parts.append(
            f"(SELECT 1, pos, {columns} FROM (SELECT row_number() OVER (ORDER BY ts_key DESC) "
            f"AS pos, ts_key, ts, doc FROM messages WHERE chan = %s{older} ORDER BY ts_key DESC "
            f"LIMIT {int(plan.fill_scan)}) newest WHERE doc @@ "
            f"({' || '.join(PHRASE for _ in plan.common)}) LIMIT {int(plan.limit)})"
        )
        args += [*phrases, chan, *([] if plan.before is None else [plan.before]), *plan.fill]
    return " UNION ALL ".join(parts), args


def keep(pieces: Pieces, plan: Plan, need: Need, found: Sequence[TupleRow]) -> None:
    """What the parts statement read, kept in ``pieces`` (the cache's lock held)."""
    phrases, k = plan.phrases, len(plan.phrases)
    drive = Read.of([r[2:] for r in found if r[0] == 0], k)
    pieces.keep(drive)
    if len(drive.keys) <= plan.cap:  # else cut: incomplete, never kept
        for n in need.whole:
            read = drive.only(drive.matches[n], phrases)
            pieces.whole[phrases[n]] = read.with_flags(pieces.whole.get(phrases[n]))
        for pair in need.pairs:
            read = drive.only(drive.matches[pair[0]] & drive.matches[pair[1]], phrases)
            key = pair_key(phrases, pair)
            pieces.pairs[key] = read.with_flags(pieces.pairs.get(key))
        pieces.held += len(drive.keys) * (len(need.whole) + len(need.pairs))
    if need.fill:  # every common term's matches up to the last row read are known
        rows = [r for r in found if r[0] == 1]
        fill = Read.of([r[2:] for r in rows], k)
        pieces.keep(fill)
        positions = [int(r[1]) for r in rows]
        reach = positions[-1] if len(rows) >= plan.limit else plan.fill_scan
        for n in plan.common:
            have = pieces.fills.get((plan.before, phrases[n]))
            if have is None or have.reach < reach:
                holds = fill.matches[n]
                keys = fill.keys.tolist()
                matches = [(p, key) for p, key, h in zip(positions, keys, holds, strict=True) if h]
                pieces.fills[(plan.before, phrases[n])] = Fill(
                    matches, np.sort(fill.keys[holds]), reach
                )
                pieces.held += len(matches)
