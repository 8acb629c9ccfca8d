"""An Okapi BM25 index updated one document at a time, scoring exactly like rank_bm25.BM25Okapi.

``rank_bm25.BM25Okapi`` is built once over a fixed corpus and scores by scanning every document
for every query term. This index keeps postings per term, so a document is added or removed in
O(its terms) and a query touches only the documents that contain one of its terms. The scores
are BM25Okapi's, term for term, on the same corpus (tests/test_search_index.py checks it):

    idf(t)   = log(N - n(t) + 0.5) - log(n(t) + 0.5), and for an idf below 0 (a term in more
               than half the documents) epsilon * the average idf of the whole vocabulary,
               averaged before that floor (BM25Okapi's ``average_idf``)
    score(d) = sum over the query's terms, repeats included, of
               idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))

A term no document contains adds nothing. Documents are identified by ``slot``, a small
non-negative int the caller allocates (and may reuse once removed). The average idf needs the
sum of every term's idf, which changes with N at every insert; it is computed from a histogram
of document frequencies (how many terms occur in exactly n documents), so its cost follows the
number of distinct frequencies, not the vocabulary. Not thread-safe: the caller serialises.

Memory is what bounds a million indexed messages, so the layout is compact. A posting is one
uint32, ``slot << 8 | tf`` (a tf of 255 or more is held as 255, its exact value in a small side
table: a word said 255 times in one message is rare). A term's postings are, by how many
documents hold it: one int (the posting itself, or the slot alone for a tf of 1: most words of
a chat channel occur in one message); a ``bytes`` of up to 64 postings (one small object, where
an ``array`` would cost a 64-byte object plus a buffer allocated apart: most of the rest occur in
2 to 10 messages), rebuilt on each change; an ``array('I')`` beyond, appended in place. A
document's distinct terms sit in one flat list shared by every document (what removing it
needs), compacted when half of it is garbage. Term strings are interned, so channels that use
the same words hold them once. Slots are below 2**24 (16.7 million documents).
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Union

import numpy as np
import numpy.typing as npt

__all__ = ["BM25Index"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
# One posting as an int (the slot for tf 1, else -code), up to _SMALL as bytes, beyond as an array.
Postings = Union[int, bytes, "array[int]"]

_EMPTY_SLOTS: IntArray = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES: FloatArray = np.zeros(0, dtype=np.float64)
_SHIFT = 8
_TF_MASK = (1 << _SHIFT) - 1  # 255: "see the side table" when a tf reaches it
MAX_SLOTS = 1 << (32 - _SHIFT)
_SMALL = 64  # the most postings held in a bytes object
_CODE = struct.Struct("=I")  # one posting in bytes, native order (as array('I') and numpy read it)
_NO_DOC = -1


def _code(slot: int, tf: int) -> int:
    return slot << _SHIFT | min(tf, _TF_MASK)


def _single(code: int) -> int:
    """A lone posting as the int kept for it: the slot itself for tf 1 (the caller's own int
    object, so a word only one message has costs no int of its own), else -code."""
    return code >> _SHIFT if code & _TF_MASK == 1 else -code


def _codes(postings: Postings) -> npt.NDArray[np.uint32]:
    """The postings' codes: a copy, never a view (an array with an exported buffer could not
    grow afterwards)."""
    if isinstance(postings, int):
        code = _code(postings, 1) if postings >= 0 else -postings
        return np.array([code], dtype=np.uint32)
    return np.frombuffer(postings, dtype=np.uint32).copy()


def _df(postings: Postings) -> int:
    if isinstance(postings, int):
        return 1
    return len(postings) // 4 if isinstance(postings, bytes) else len(postings)


def _position(postings: bytes | array[int], slot: int) -> int:
    """Where ``slot``'s posting is (the numpy view is gone when this returns)."""
    codes = np.frombuffer(postings, dtype=np.uint32)
    return int(np.flatnonzero((codes >> _SHIFT) == slot)[0])


class BM25Index:
    """Postings per term, a flat store of each document's terms, and lengths."""

    def __init__(self) -> None:
        self._postings: dict[str, Postings] = {}
        # Document slot -> where its distinct terms start in _doc_terms, and how many.
        self._doc_terms: list[str] = []
        self._doc_start: npt.NDArray[np.int32] = np.full(64, _NO_DOC, dtype=np.int32)
        self._doc_count: npt.NDArray[np.int32] = np.zeros(64, dtype=np.int32)
        self._garbage = 0  # ids in _doc_terms no document points at any more
        self._docs = 0
        self._lengths: npt.NDArray[np.int32] = np.zeros(64, dtype=np.int32)  # tokens per doc
        self._total_length = 0
        self._df_counts: dict[int, int] = {}  # document frequency -> terms with it
        self._big_tf: dict[tuple[str, int], int] = {}  # (term, slot) -> a tf of 255 or more
        self._average_idf: float | None = None

    # -- writes -------------------------------------------------------------------------------

    def add(self, slot: int, tokens: Sequence[str]) -> None:
        """Index ``tokens`` (repeats count) as document ``slot``, which must be free."""
        if slot in self:
            raise ValueError(f"slot {slot} already holds a document")
        if slot >= len(self._lengths):
            self._grow(max(slot + 1, len(self._lengths) + len(self._lengths) // 4 + 16))
        if not 0 <= slot < MAX_SLOTS:
            raise ValueError(f"slot {slot} is out of range (0 to {MAX_SLOTS - 1})")
        counts = Counter(tokens)
        self._doc_start[slot] = len(self._doc_terms)
        self._doc_count[slot] = len(counts)
        all_postings = self._postings
        intern = sys.intern
        pack = _CODE.pack
        base = slot << _SHIFT
        # Document frequencies that moved (df -> how many terms left it): applied once after
        # the loop, each term having gone from df to df + 1.
        moved: dict[int, int] = {}
        terms = self._doc_terms
        for token, tf in counts.items():
            # The vocabulary's own string, also for a known term: the tokeniser's cache misses
            # give every occurrence of a rarer word a string of its own, which the term list
            # would otherwise keep.
            term = intern(token)
            postings = all_postings.get(term)
            if tf >= _TF_MASK:
                self._big_tf[(term, slot)] = tf
                code = base | _TF_MASK
            else:
                code = base | tf
            if postings is None:
                all_postings[term] = slot if tf == 1 else -code
                df = 0
            elif isinstance(postings, int):
                first = -postings if postings < 0 else postings << _SHIFT | 1
                all_postings[term] = pack(first) + pack(code)
                df = 1
            elif isinstance(postings, bytes):
                df = len(postings) // 4
                if df < _SMALL:
                    all_postings[term] = postings + pack(code)
                else:
                    grown = array("I", postings)
                    grown.append(code)
                    all_postings[term] = grown
            else:
                df = len(postings)
                postings.append(code)
            moved[df] = moved.get(df, 0) + 1
            terms.append(term)
        df_counts = self._df_counts
        for df, many in moved.items():
            if df:
                left = df_counts[df] - many
                if left:
                    df_counts[df] = left
                else:
                    del df_counts[df]
        for df, many in moved.items():
            df_counts[df + 1] = df_counts.get(df + 1, 0) + many
        self._lengths[slot] = len(tokens)
        self._total_length += len(tokens)
        self._docs += 1
        self._average_idf = None

    def remove(self, slot: int) -> None:
        """Forget document ``slot``; unknown slots are ignored."""
        if slot not in self:
            return
        start, count = int(self._doc_start[slot]), int(self._doc_count[slot])
        all_postings = self._postings
        for term in self._doc_terms[start : start + count]:
            postings = all_postings[term]
            df = _df(postings)
            if self._big_tf:
                self._big_tf.pop((term, slot), None)
            if isinstance(postings, int):
                del all_postings[term]
            elif isinstance(postings, bytes):
                at = 4 * _position(postings, slot)
                left = postings[:at] + postings[at + 4 :]
                all_postings[term] = _single(_CODE.unpack(left)[0]) if df == 2 else left
            else:
                at = _position(postings, slot)
                postings[at] = postings[-1]
                del postings[-1]
                if df - 1 <= _SMALL // 2:  # shrunk well below the bytes limit: back to bytes
                    all_postings[term] = postings.tobytes()
            self._move_df(df, -1)
        self._doc_start[slot] = _NO_DOC
        self._doc_count[slot] = 0
        self._garbage += count
        self._docs -= 1
        self._total_length -= int(self._lengths[slot])
        self._lengths[slot] = 0
        self._average_idf = None
        if self._garbage > 4096 and 2 * self._garbage > len(self._doc_terms):
            self._compact()

    def _grow(self, size: int) -> None:
        used = len(self._lengths)
        lengths = np.zeros(size, dtype=np.int32)
        lengths[:used] = self._lengths
        start = np.full(size, _NO_DOC, dtype=np.int32)
        start[:used] = self._doc_start
        count = np.zeros(size, dtype=np.int32)
        count[:used] = self._doc_count
        self._lengths, self._doc_start, self._doc_count = lengths, start, count

    def _compact(self) -> None:
        """Rewrite the flat term store without the removed documents' terms."""
        old: list[str] = self._doc_terms
        kept: list[str] = []
        for slot in np.flatnonzero(self._doc_start != _NO_DOC).tolist():
            start, count = int(self._doc_start[slot]), int(self._doc_count[slot])
            self._doc_start[slot] = len(kept)
            kept.extend(old[start : start + count])
        self._doc_terms, self._garbage = kept, 0

    def _move_df(self, df: int, step: int) -> None:
        # A term's document frequency goes from df to df + step (0 means not in the vocabulary).
        if df:
            left = self._df_counts[df] - 1
            if left:
                self._df_counts[df] = left
            else:
                del self._df_counts[df]
        if df + step:
            self._df_counts[df + step] = self._df_counts.get(df + step, 0) + 1

    # -- reads --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._docs

    def __contains__(self, slot: object) -> bool:
        return (
            isinstance(slot, int)
            and 0 <= slot < len(self._doc_start)
            and self._doc_start[slot] != _NO_DOC
        )

    @property
    def vocabulary_size(self) -> int:
        return len(self._postings)

    @property
    def average_length(self) -> float:
        return self._total_length / self._docs if self._docs else 0.0

    def terms_of(self, slot: int) -> tuple[str, ...]:
        """The distinct terms of document ``slot`` (empty if unknown)."""
        if slot not in self:
            return ()
        start, count = int(self._doc_start[slot]), int(self._doc_count[slot])
        return tuple(self._doc_terms[start : start + count])

    def _postings_of(self, term: str) -> Postings | None:
        return self._postings.get(term)

    def df(self, term: str) -> int:
        """How many documents contain ``term``."""
        postings = self._postings_of(term)
        return 0 if postings is None else _df(postings)

    def slots_with(self, term: str) -> IntArray:
        """The documents that contain ``term`` (unordered)."""
        postings = self._postings_of(term)
        if postings is None:
            return _EMPTY_SLOTS
        return (_codes(postings) >> _SHIFT).astype(np.int64)

    def _slots_tf(self, term: str, postings: Postings) -> tuple[IntArray, FloatArray]:
        """(slots, term frequencies) of ``term``'s postings."""
        codes = _codes(postings)
        slots = (codes >> _SHIFT).astype(np.int64)
        tf = (codes & _TF_MASK).astype(np.float64)
        if self._big_tf:
            for at in np.flatnonzero(tf == _TF_MASK).tolist():
                tf[at] = self._big_tf[(term, int(slots[at]))]
        return slots, tf

    def average_idf(self) -> float:
        """BM25Okapi's ``average_idf``: the mean raw idf over the vocabulary (0 if empty)."""
        if self._average_idf is None:
            n = self._docs
            vocabulary = len(self._postings)
            if not vocabulary:
                self._average_idf = 0.0
            else:
                dfs = np.fromiter(self._df_counts.keys(), dtype=np.float64)
                counts = np.fromiter(self._df_counts.values(), dtype=np.float64)
                raw = np.log(n - dfs + 0.5) - np.log(dfs + 0.5)
                self._average_idf = float(np.dot(counts, raw)) / vocabulary
        return self._average_idf

    def idf(self, term: str, *, epsilon: float = 0.25) -> float:
        """BM25Okapi's idf of ``term``, its floor included; 0 for a term no document has."""
        df = self.df(term)
        if not df:
            return 0.0
        n = self._docs
        raw = math.log(n - df + 0.5) - math.log(df + 0.5)
        return raw if raw >= 0 else epsilon * self.average_idf()

    def dense_scores(
        self,
        query: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        size: int | None = None,
        out: FloatArray | None = None,
    ) -> FloatArray:
        """Every slot's score (``size`` cells, at least one per slot); 0 without a query term.
        ``out``: zeros to add the scores into, used if it has cells enough (a new array if not).
        """
        length = max(len(self._lengths), size or 0)
        total = out if out is not None and len(out) >= length else np.zeros(length)
        if not self._docs or not self._total_length:
            return total
        average_length = self._total_length / self._docs
        lengths = self._lengths
        for term in query:
            postings = self._postings_of(term)
            if postings is None:
                continue
            slots, tf = self._slots_tf(term, postings)
            norm = k1 * (1 - b + b * lengths[slots].astype(np.float64) / average_length)
            total[slots] += self.idf(term, epsilon=epsilon) * (tf * (k1 + 1) / (tf + norm))
        return total

    def scores(
        self,
        query: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> tuple[IntArray, FloatArray]:
        """(slots, scores) of every document holding a query term, slots ascending.

        Every other document scores 0, as in ``BM25Okapi.get_scores``.
        """
        present = [t for t in query if t in self._postings]
        if not present:
            return _EMPTY_SLOTS, _EMPTY_SCORES
        slots = np.unique(np.concatenate([self.slots_with(t) for t in present]))
        total = self.dense_scores(present, k1=k1, b=b, epsilon=epsilon)
        return slots, total[slots]
