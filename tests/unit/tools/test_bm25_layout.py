"""The BM25 index's compact postings (tools/_bm25.py) keep BM25Okapi's scores in every form.

A term's postings move between forms as its document count changes (one int, a bytes of up to
64 postings, an array beyond, back to bytes when it shrinks), and a term frequency of 255 or
more lives in a side table. The property tests of tests/unit/tools/test_search_index.py use 16 slots and
small frequencies, so they never reach the array form or the side table; these do. The size
test counts bytes (``sys.getsizeof``), which is deterministic for a given Python.
"""

from __future__ import annotations

import random
import sys
from array import array

import pytest
from chanctx.tools._bm25 import MAX_SLOTS, BM25Index
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

_WORDS = ["deploy", "fail", "pool", "502", "flag"]
# Mostly short documents; now and then one saying a word hundreds of times (tf past 255).
_DOCUMENT = st.one_of(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6),
    st.tuples(st.sampled_from(_WORDS), st.integers(250, 300)).map(lambda p: [p[0]] * p[1]),
)
_OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["add", "add", "add", "delete"]), st.integers(0, 159), _DOCUMENT),
    min_size=1,
    max_size=400,
)


def _check(index: BM25Index, corpus: dict[int, list[str]], query: list[str]) -> None:
    slots = sorted(corpus)
    okapi = BM25Okapi([corpus[s] for s in slots])
    expected = dict(zip(slots, (float(x) for x in okapi.get_scores(query)), strict=True))
    dense = index.dense_scores(query)
    for slot, value in expected.items():
        assert dense[slot] == pytest.approx(value, abs=1e-9, rel=0), slot
    for word in _WORDS:
        holding = {s for s, d in corpus.items() if word in d}
        assert index.df(word) == len(holding)
        assert set(index.slots_with(word).tolist()) == holding


@given(_OPERATIONS, st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4))
@settings(max_examples=60, deadline=None)
def test_scores_equal_bm25okapi_through_every_postings_form(
    operations: list[tuple[str, int, list[str]]], query: list[str]
) -> None:
    index, corpus = BM25Index(), dict[int, list[str]]()
    for step, (operation, slot, document) in enumerate(operations):
        if slot in corpus:
            index.remove(slot)
            del corpus[slot]
        if operation == "add":
            index.add(slot, document)
            corpus[slot] = document
        if corpus and step % 50 == 49:
            _check(index, corpus, query)
    if corpus:
        _check(index, corpus, query)
    assert not index._big_tf.keys() - {
        (w, s) for s, d in corpus.items() for w in set(d) if d.count(w) >= 255
    }


def test_a_term_grows_into_an_array_and_shrinks_back() -> None:
    index = BM25Index()
    for slot in range(100):
        index.add(slot, ["deploy"] * (1 + slot % 3))
    assert isinstance(index._postings["deploy"], array)
    assert index.df("deploy") == 100
    for slot in range(99, 1, -1):
        index.remove(slot)
        kind = index._postings["deploy"]
        assert isinstance(kind, bytes) or len(kind) > 32, slot
    assert isinstance(index._postings["deploy"], bytes)
    index.remove(1)
    assert index._postings["deploy"] == 0  # one posting left, tf 1: the slot itself
    assert index.slots_with("deploy").tolist() == [0]


def test_the_term_list_holds_the_vocabulary_strings() -> None:
    index = BM25Index()
    first, second = "".join(["dep", "loy"]), "".join(["de", "ploy"])
    assert first is not second
    index.add(0, [first])
    index.add(1, [second])
    assert index.terms_of(0)[0] is index.terms_of(1)[0] is sys.intern("deploy")


def test_a_slot_beyond_the_code_range_is_refused() -> None:
    with pytest.raises(ValueError, match=f"slot {MAX_SLOTS} is out of range"):
        BM25Index().add(MAX_SLOTS, ["deploy"])


@pytest.mark.slow
def test_postings_of_a_chat_channel_cost_under_seven_bytes_each() -> None:
    """5,000 messages of ten words drawn from a Zipf vocabulary (most words rare, as in chat):
    every postings object's bytes, over the postings they hold: 6.4 here, where the layout
    this replaced (an array of (slot, tf) pairs per term held by two or more) cost 14.5."""
    rng = random.Random(7)
    vocabulary = [f"w{n}" for n in range(40_000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    index = BM25Index()
    for slot in range(5_000):
        index.add(slot, rng.choices(vocabulary, weights, k=10))
    postings = size = 0
    for term, value in index._postings.items():
        postings += index.df(term)
        if not isinstance(value, int):  # an int is the slot itself or a small packed int
            size += sys.getsizeof(value)
    assert size / postings < 7, size / postings
