"""A chunk with ASCII digits is marked from its digit template (every digit a 0) with the
digits put back: the stream, and so the count, is the one marked from the chunk itself."""

from __future__ import annotations

import dataclasses

from chanctx.context import _tiling
from chanctx.context._tiling import Tiler
from chanctx.context._vocab import vocabulary
from hypothesis import given, settings
from hypothesis import strategies as st

_VOCABS = [("v3", True), ("v4_7", True), ("v4_7", False)]
_PIECES = ["0", "7", "42", "2025", "1700871395.007115", "-", ":", ".", '"', "[", "]", "T", "Z",
           "message", "C0BEYOND01", "It", "'", "s", "ALLCAPS", "é", "\u0301", "١٢", "²", "日本",
           "😀", "x", "v2", "#", ","]  # fmt: skip
CHUNKS = st.one_of(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=20).map("".join),
    st.text(st.characters(exclude_categories=("Zs", "Zl", "Zp", "Cc", "Co", "Cs")), min_size=1),
)
TILERS = {vocab: Tiler(vocabulary(*vocab)) for vocab in _VOCABS}  # templates kept across examples


@settings(max_examples=800, deadline=None)
@given(vocab=st.sampled_from(_VOCABS), flag=st.sampled_from(sorted(_tiling._EDGES)), text=CHUNKS)
def test_a_chunk_marked_from_its_digit_template_is_marked_as_itself(
    vocab: tuple[str, bool], flag: str, text: str
) -> None:
    if any(c in _tiling.WHITESPACE for c in text):
        return  # a chunk holds no whitespace
    tiler = TILERS[vocab]
    key = flag + text
    assert tiler._stream(key) == tiler._marked(key)
    assert tiler._stream(key) == tiler._marked(key)  # the template now remembered


def test_times_and_ids_share_one_template() -> None:
    tiler = Tiler(vocabulary("v4_7", False))
    for second in range(10, 60):
        text = f'"[2025-01-02T03:04:{second}Z]'
        assert tiler._stream("1" + text) == tiler._marked("1" + text)
    assert tiler._template.cache_info().currsize == 1


def test_a_long_chunks_template_is_not_kept() -> None:
    tiler = Tiler(vocabulary("v3", True))
    text = "id-" + "1234567890" * 20
    assert tiler._stream("1" + text) == tiler._marked("1" + text)
    assert tiler._template.cache_info().currsize == 0


_SEGMENT_PIECES = ["0", "7", "12", "2025", "1700871395", "-", ":", ".", '"', "x", "the", "é",
                   "\ue000", "\ue001", "\ue002", "١٢", "😀"]  # fmt: skip
SEGMENTS = st.lists(st.sampled_from(_SEGMENT_PIECES), min_size=1, max_size=16).map("".join)


@settings(max_examples=800, deadline=None)
@given(vocab=st.sampled_from(_VOCABS), seg=SEGMENTS)
def test_digit_runs_tiled_alone_cost_what_the_scan_finds(vocab: tuple[str, bool], seg: str) -> None:
    fast, scan = Tiler(vocabulary(*vocab)), Tiler(vocabulary(*vocab))
    scan._digits = 0  # the scan over the whole segment, digits and all
    assert fast._digits == 3
    assert fast._tile(seg) == scan._tile(seg)


def test_a_vocabulary_mixing_digits_and_text_is_tiled_by_the_scan() -> None:
    base = vocabulary("v3", True)
    mixed = dataclasses.replace(base, table={**base.table, "v2": True})
    short = dataclasses.replace(base, table={k: v for k, v in base.table.items() if k != "42"})
    assert _tiling._digit_pieces(mixed) == 0
    assert _tiling._digit_pieces(short) == 0
    assert _tiling._digit_pieces(base) == 3
