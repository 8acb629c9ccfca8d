"""A long text's whole count is remembered under its digest: the same count as the tiler's,
bounded, and holding no text."""

from __future__ import annotations

import pytest
from chanctx.context import tokens
from chanctx.context._tiling import Tiler
from chanctx.context._vocab import vocabulary
from chanctx.context.tokens import PieceCounter
from hypothesis import given, settings
from hypothesis import strategies as st

_WORDS = ["deploy", "The", "rollback", "🙂", "日本", "\ud800", "\n", "  ", "v2.30.4", ",", "é"]
LONG_TEXTS = st.lists(st.sampled_from(_WORDS), min_size=60, max_size=400).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(text=LONG_TEXTS, edit=st.sampled_from(["", " x", ".", "\n", "É"]))
def test_a_remembered_count_is_the_tilers_and_an_edit_is_counted_afresh(
    text: str, edit: str
) -> None:
    counter = PieceCounter("claude_v4_8")
    cold = Tiler(vocabulary("v4_7", False))
    assert counter.count(text) == cold.count(text)
    assert counter.count(text) == cold.count(text)  # the remembered one
    assert counter.count(text + edit) == cold.count(text + edit)


@pytest.mark.slow  # counts past the cache's bound: about 1.5-2.5 s
def test_the_remembered_counts_stay_bounded_and_hold_no_text() -> None:
    counter = PieceCounter("claude_v3")
    for i in range(tokens._COUNTS + 500):
        counter.count(f"message {i} " * 40)
    assert counter.remembered() == tokens._COUNTS
    held = counter._texts._counts
    assert all(isinstance(key, bytes) and len(key) == 16 for key in held)
    assert not any(b"message" in key for key in held)


def test_short_texts_are_not_remembered() -> None:
    counter = PieceCounter("claude_v3")
    counter.count("a short message")
    assert counter.remembered() == 0
