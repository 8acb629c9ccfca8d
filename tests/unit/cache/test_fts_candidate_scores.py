"""``_fts_search``'s scoring of the row ids it read, with numpy, equals the per-row loop it
replaced: the same rows, the same scores to the last bit (each row's weights added in term
order from 0.0), the same order (best score first, ties to the newer row)."""

from __future__ import annotations

import math

import numpy as np
from chanctx.cache.channel_store._fts_search import CAP, _scored
from hypothesis import given, settings
from hypothesis import strategies as st

_ids = st.lists(st.integers(1, 3 * CAP), unique=True, max_size=CAP + 1)


def _loop(found: list[list[int]], size: int) -> dict[int, float]:
    score: dict[int, float] = {}
    for ids in found:
        df = max(len(ids), CAP + 1) if len(ids) > CAP else len(ids)
        weight = math.log(1.0 + (size - df + 0.5) / (df + 0.5))
        for row in ids:
            score[row] = score.get(row, 0.0) + weight
    return score


@settings(deadline=None, max_examples=60)
@given(st.lists(_ids, min_size=1, max_size=5), st.integers(0, 10 * CAP))
def test_numpy_scores_equal_the_loop(found: list[list[int]], extra: int) -> None:
    size = max(map(len, found)) + 1 + extra
    expected = _loop(found, size)
    rows, score = _scored(found, size)
    assert dict(zip(rows.tolist(), score.tolist(), strict=True)) == expected
    best = sorted(expected, key=lambda row: (-expected[row], -row))
    assert [int(r) for r in rows[np.lexsort((-rows, -score))]] == best
