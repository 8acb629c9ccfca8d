"""``KeyBlocks`` (the channel's top-level keys an index links an older message among) behaves
like one sorted list: the same items after any inserts and removals, and the same neighbours
of any key, present or not, across the blocks' edges."""

from __future__ import annotations

import bisect

from chanctx.tools._columns import KeyBlocks
from hypothesis import given, settings
from hypothesis import strategies as st

_ops = st.lists(
    st.tuples(st.sampled_from(["add", "add", "add", "remove"]), st.integers(0, 3_000)),
    max_size=2_500,
)


def _neighbours(model: list[int], item: int) -> tuple[int | None, int | None]:
    below = bisect.bisect_left(model, item)
    above = bisect.bisect_right(model, item)
    return (model[below - 1] if below else None, model[above] if above < len(model) else None)


@settings(deadline=None, max_examples=60)
@given(_ops, st.lists(st.integers(-1, 3_001), max_size=40))
def test_key_blocks_behave_like_a_sorted_list(ops: list[tuple[str, int]], asked: list[int]) -> None:
    blocks, model = KeyBlocks(), list[int]()
    for kind, item in ops:
        if kind == "add":
            blocks.insert(item)
            if item not in model:
                bisect.insort(model, item)
        else:
            assert blocks.remove(item) == (item in model)
            if item in model:
                model.remove(item)
        assert len(blocks) == len(model)
    for item in [*asked, *model[::97]]:
        assert blocks.neighbours(item) == _neighbours(model, item)


def test_appending_in_order_then_removing_crosses_block_edges() -> None:
    blocks, model = KeyBlocks(), list(range(0, 6_000, 2))
    for item in model:  # a build: keys in order, blocks split as they fill
        blocks.insert(item)
    for item in range(0, 6_000, 7):
        assert blocks.neighbours(item) == _neighbours(model, item)
    for item in range(0, 3_000, 2):  # the oldest half gone: whole blocks emptied
        assert blocks.remove(item)
    rest = model[1_500:]
    assert len(blocks) == len(rest)
    assert blocks.neighbours(0) == (None, rest[0]) and blocks.neighbours(10**9) == (rest[-1], None)
    assert blocks.neighbours(rest[0]) == (None, rest[1])
