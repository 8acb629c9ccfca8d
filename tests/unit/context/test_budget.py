"""Seed 001's optimizer properties: ordering, budget compliance, truncation priority."""

from __future__ import annotations

import pytest
from chanctx.context import BudgetError, default_counter
from chanctx.context._truncate import sentence_boundaries
from chanctx.context.budget import Chunk, optimize, pack
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import chat_text

COUNTER = default_counter()


def cost(chunk: Chunk[int], text: str) -> int:
    return COUNTER.count(text) + 2  # a per-chunk frame, as JSON fragments have


chunks = st.lists(
    st.builds(
        Chunk,
        key=st.uuids().map(str),
        text=chat_text,
        item=st.integers(),
        relevance=st.floats(0, 1, allow_nan=False),
        pinned=st.booleans(),
    ),
    max_size=30,
)


@given(chunks, st.integers(0, 3_000))
def test_total_never_exceeds_budget(candidates: list[Chunk[int]], budget: int) -> None:
    packing = optimize(candidates, budget=budget, cost=cost)
    assert packing.used <= budget
    assert packing.used == sum(p.tokens for p in packing.included)
    assert sum(cost(p.chunk, p.text) for p in packing.included) <= budget


@given(chunks, st.integers(0, 3_000))
def test_pinned_first_then_relevance(candidates: list[Chunk[int]], budget: int) -> None:
    order = [
        (not p.chunk.pinned, -p.chunk.relevance)
        for p in optimize(candidates, budget=budget, cost=cost).included
    ]
    assert order == sorted(order)


@given(chunks, st.integers(0, 3_000))
def test_higher_relevance_kept_over_lower(candidates: list[Chunk[int]], budget: int) -> None:
    packing = optimize(candidates, budget=budget, cost=cost)
    kept = {id(p.chunk) for p in packing.included if not p.truncated}
    cut = [p.chunk for p in packing.included if p.truncated]
    rank = {id(c): (not c.pinned, -c.relevance) for c in candidates}
    dropped = [c for c in candidates if id(c) not in kept and c not in cut]
    for lost in dropped + cut:
        for chunk in candidates:
            if id(chunk) in kept:
                assert rank[id(chunk)] <= rank[id(lost)]
    assert len(cut) <= 1


@given(chunks, st.integers(0, 3_000))
def test_cuts_fall_on_sentence_boundaries(candidates: list[Chunk[int]], budget: int) -> None:
    for packed in optimize(candidates, budget=budget, cost=cost).included:
        if packed.truncated:
            assert packed.text.endswith(" ...")
            kept = packed.text.removesuffix(" ...")
            original = packed.chunk.text
            assert any(original[:end].rstrip() == kept for end in sentence_boundaries(original))
        else:
            assert packed.text == packed.chunk.text


def test_everything_fits_when_budget_is_large() -> None:
    items = [Chunk(key=str(i), text=f"Message {i}.", item=i, relevance=i / 10) for i in range(10)]
    packing = optimize(items, budget=10_000, cost=cost)
    assert [p.chunk.item for p in packing.included] == list(range(9, -1, -1))
    assert not packing.exhausted


def test_the_chunk_that_does_not_fit_is_cut_and_packing_stops() -> None:
    long_text = "First point is short. " + "Second point goes on and on. " * 40
    items = [
        Chunk(key="a", text="Pinned fact.", item=0, pinned=True),
        Chunk(key="b", text=long_text, item=1, relevance=0.9),
        Chunk(key="c", text="Small but less relevant.", item=2, relevance=0.1),
    ]
    budget = cost(items[0], items[0].text) + cost(items[1], "First point is short. ...")
    packing = optimize(items, budget=budget, cost=cost)
    assert [p.chunk.key for p in packing.included] == ["a", "b"]
    assert packing.included[1].text == "First point is short. ..."
    assert packing.included[1].truncated and packing.exhausted


def test_pack_is_lazy_and_stops_consuming() -> None:
    consumed: list[int] = []

    def endless() -> object:
        index = 0
        while True:
            consumed.append(index)
            yield Chunk(key=str(index), text="A short sentence here.", item=index)
            index += 1

    packing = pack(endless(), budget=100, cost=cost)  # type: ignore[arg-type]
    assert len(consumed) == len(packing.included) + 1


def test_negative_budget_is_a_clear_error() -> None:
    with pytest.raises(BudgetError, match="-5"):
        pack([], budget=-5, cost=cost)
