"""Batches of parts (``write_parts``, what the quick intake commits on its own thread) and
submissions to the group committer: wherever the batches are cut, the store ends as the parts
written one at a time in order, a malformed part fails alone (its outcome the exception, every
other part's a ``WriteResult``), and so does a malformed submission."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from chanctx.cache.channel_store import (
    GroupCommitter,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    SqliteChannelStore,
    StoreEvent,
    WriteResult,
    write_parts,
)
from chanctx.context import InvalidTimestamp, Message
from hypothesis import given, settings
from hypothesis import strategies as st

T = "T1"
BASE = 1_700_000_000


def ts(second: int) -> str:
    return f"{BASE + second}.000000"


def part(kind: str, n: int, k: int) -> list[StoreEvent]:
    """One submission: a post, an edit (its outcome depends on whether the post came first),
    a deletion, or a malformed post (a bad ts: the store refuses it)."""
    if kind == "post":
        message = Message.model_validate(
            {"channel": "C1", "ts": ts(n), "user_id": "U1", "text": f"post {n} copy {k}"}
        )
        return [MessagePosted(T, message)]
    if kind == "edit":
        return [MessageEdited(T, "C1", ts(n), f"edit {n} to {k}", ts(100 + k))]
    if kind == "delete":
        return [MessageDeleted(T, "C1", ts(n))]
    bad = Message.model_construct(channel="C1", ts="bad", user_id="U1", text="x")
    return [MessagePosted(T, bad)]


_PARTS = st.lists(
    st.tuples(st.sampled_from(["post", "post", "edit", "delete", "bad"]), st.integers(0, 3),
              st.integers(0, 5)),
    min_size=1, max_size=30,
)  # fmt: skip


def held(store: SqliteChannelStore) -> list[tuple[str, str, bool]]:
    return [(m.ts, m.text, m.deleted) for m in store.messages(T, "C1", limit=100)]


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(ops=_PARTS, cuts=st.lists(st.integers(1, 29), max_size=5))
def test_batches_of_parts_store_what_the_parts_store_alone_and_a_bad_one_fails_alone(
    ops: list[tuple[str, int, int]], cuts: list[int]
) -> None:
    parts = [part(*op) for op in ops]
    edges = sorted({0, len(parts), *(c for c in cuts if c < len(parts))})
    with tempfile.TemporaryDirectory() as grouped_dir, tempfile.TemporaryDirectory() as alone_dir:
        grouped = SqliteChannelStore(Path(grouped_dir), synchronous="NORMAL")
        alone = SqliteChannelStore(Path(alone_dir), synchronous="NORMAL")
        try:
            outcomes: list[WriteResult | Exception] = []
            for start, end in itertools.pairwise(edges):
                outcomes += write_parts(grouped, parts[start:end])
            for (kind, _, _), stored, outcome in zip(ops, parts, outcomes, strict=True):
                if kind == "bad":
                    assert isinstance(outcome, InvalidTimestamp)
                    continue
                assert isinstance(outcome, WriteResult)
                alone.write(stored)
            assert held(grouped) == held(alone)
        finally:
            grouped.close()
            alone.close()


def test_the_committer_fails_a_bad_submission_alone_in_queue_order() -> None:
    with tempfile.TemporaryDirectory() as grouped_dir, tempfile.TemporaryDirectory() as alone_dir:
        grouped = SqliteChannelStore(Path(grouped_dir), synchronous="NORMAL")
        alone = SqliteChannelStore(Path(alone_dir), synchronous="NORMAL")
        try:
            ops = [("post", 0, 0), ("edit", 0, 1), ("bad", 0, 0), ("delete", 1, 0), ("post", 1, 2)]
            parts = [part(*op) for op in ops]
            committer = GroupCommitter(grouped)
            futures = [committer.submit_nowait(p) for p in parts]
            committer.close()
            for (kind, _, _), stored, future in zip(ops, parts, futures, strict=True):
                if kind == "bad":
                    assert isinstance(future.exception(), InvalidTimestamp)
                    continue
                assert isinstance(future.result(), WriteResult)
                alone.write(stored)
            assert held(grouped) == held(alone)
        finally:
            grouped.close()
            alone.close()
