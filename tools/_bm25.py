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
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["BM25Index"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_EMPTY_SLOTS: IntArray = np.zeros(0, dtype=np.int64)
_EMPTY_SCORES: FloatArray = np.zeros(0, dtype=np.float64)


def _positions(postings: array[int]) -> npt.NDArray[np.int32]:
    # A copy, never a view: an array with an exported buffer could not grow afterwards.
    return np.array(postings, dtype=np.int32).reshape(-1, 2)


def _offset(postings: array[int], slot: int) -> int:
    """Where ``slot``'s pair starts in ``postings`` (it must be there)."""
    # A view for the scan only: it is gone when this returns, before the array is resized.
    view = np.frombuffer(postings, dtype=np.int32)
    return 2 * int(np.flatnonzero(view[0::2] == slot)[0])


class BM25Index:
    """Postings (term -> [slot, tf, slot, tf, ...] as a compact int32 array) and lengths."""

    def __init__(self) -> None:
        self._postings: dict[str, array[int]] = {}
        self._terms: dict[int, tuple[str, ...]] = {}  # slot -> its distinct terms
        self._lengths: FloatArray = np.zeros(64, dtype=np.float64)
        self._total_length = 0
        self._df_counts: dict[int, int] = {}  # document frequency -> terms with it
        self._average_idf: float | None = None

    # -- writes -------------------------------------------------------------------------------

    def add(self, slot: int, tokens: Sequence[str]) -> None:
        """Index ``tokens`` (repeats count) as document ``slot``, which must be free."""
        if slot in self._terms:
            raise ValueError(f"slot {slot} already holds a document")
        if slot >= len(self._lengths):
            grown = np.zeros(max(slot + 1, 2 * len(self._lengths)), dtype=np.float64)
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = array("i")
            self._move_df(len(postings) // 2, +1)
            postings.append(slot)
            postings.append(tf)
        self._terms[slot] = tuple(counts)
        self._lengths[slot] = len(tokens)
        self._total_length += len(tokens)
        self._average_idf = None

    def remove(self, slot: int) -> None:
        """Forget document ``slot``; unknown slots are ignored."""
        terms = self._terms.pop(slot, None)
        if terms is None:
            return
        for term in terms:
            postings = self._postings[term]
            df = len(postings) // 2
            index = _offset(postings, slot)
            postings[index], postings[index + 1] = postings[-2], postings[-1]
            del postings[-2:]
            self._move_df(df, -1)
            if not postings:
                del self._postings[term]
        self._total_length -= int(self._lengths[slot])
        self._lengths[slot] = 0.0
        self._average_idf = None

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
        return len(self._terms)

    def __contains__(self, slot: object) -> bool:
        return slot in self._terms

    @property
    def vocabulary_size(self) -> int:
        return len(self._postings)

    @property
    def average_length(self) -> float:
        return self._total_length / len(self._terms) if self._terms else 0.0

    def terms_of(self, slot: int) -> tuple[str, ...]:
        """The distinct terms of document ``slot`` (empty if unknown)."""
        return self._terms.get(slot, ())

    def df(self, term: str) -> int:
        """How many documents contain ``term``."""
        postings = self._postings.get(term)
        return 0 if postings is None else len(postings) // 2

    def slots_with(self, term: str) -> IntArray:
        """The documents that contain ``term`` (unordered)."""
        postings = self._postings.get(term)
        if postings is None:
            return _EMPTY_SLOTS
        return _positions(postings)[:, 0].astype(np.int64)

    def average_idf(self) -> float:
        """BM25Okapi's ``average_idf``: the mean raw idf over the vocabulary (0 if empty)."""
        if self._average_idf is None:
            n = len(self._terms)
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
        n = len(self._terms)
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
    ) -> FloatArray:
        """Every slot's score (``size`` cells, at least one per slot); 0 without a query term."""
        length = max(len(self._lengths), size or 0)
        total = np.zeros(length, dtype=np.float64)
        if not self._terms or not self._total_length:
            return total
        average_length = self._total_length / len(self._terms)
        lengths = self._lengths
        for term in query:
            postings = self._postings.get(term)
            if postings is None:
                continue
            pairs = _positions(postings)
            slots = pairs[:, 0]
            tf = pairs[:, 1].astype(np.float64)
            norm = k1 * (1 - b + b * lengths[slots] / average_length)
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
