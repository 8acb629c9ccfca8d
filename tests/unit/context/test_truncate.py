from __future__ import annotations

from chanctx.context import snippet, truncate_at_sentence
from chanctx.context._truncate import sentence_boundaries
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import chat_text


@given(st.text(), st.integers(10, 300))
def test_snippet_is_short_flat_and_deterministic(text: str, limit: int) -> None:
    cut = snippet(text, limit)
    assert cut == snippet(text, limit)
    assert len(cut) <= limit + 3
    assert "\n" not in cut and "  " not in cut
    flat = " ".join(text.split())
    if len(flat) <= limit:
        assert cut == flat
    else:
        assert cut.endswith("...")
        assert flat.startswith(cut.removesuffix("..."))


def test_snippet_cuts_at_a_word_boundary() -> None:
    text = "The canary in eu-west-1 failed health checks " * 10
    cut = snippet(text, 150)
    kept = cut.removesuffix("...")
    assert len(kept) <= 150 and text.startswith(kept)
    assert text[len(kept)] == " "


def test_snippet_collapses_whitespace() -> None:
    assert snippet("a\n\n  b\tc ") == "a b c"


@given(chat_text, st.integers(0, 400))
def test_sentence_cut_is_a_prefix_at_a_boundary_that_fits(text: str, limit: int) -> None:
    cut = truncate_at_sentence(text, lambda candidate: len(candidate) <= limit)
    boundaries = sentence_boundaries(text)
    if cut is None:
        assert all(len(text[:end].rstrip()) + 4 > limit for end in boundaries)
        return
    assert len(cut) <= limit and cut.endswith(" ...")
    kept = cut.removesuffix(" ...")
    assert any(text[:end].rstrip() == kept for end in boundaries)
    longer = [end for end in boundaries if len(text[:end].rstrip()) > len(kept)]
    assert all(len(text[:end].rstrip()) + 4 > limit for end in longer)  # the longest that fits


def test_sentence_boundaries_know_punctuation_and_lines() -> None:
    text = 'He said "stop." Then? Fine!\nnext line\nlast'
    assert [text[:end] for end in sentence_boundaries(text)] == [
        'He said "stop."',
        'He said "stop." Then?',
        'He said "stop." Then? Fine!',
        'He said "stop." Then? Fine!\nnext line',
    ]
    assert sentence_boundaries("v1.2.3 is out") == []
