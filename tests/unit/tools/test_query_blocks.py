"""The query API reads a hit's thread only when packing reaches its block, and still takes the
blocks in the order it did when it read every thread first: relevance descending, hit order
among ties, a thread the caches hold nothing of split into its hits' own message blocks."""

from __future__ import annotations

from chanctx.context import Message, Names
from chanctx.tools._query import _blocks, _blocks_by_relevance
from chanctx.tools._ranking import Hit
from hypothesis import given, settings
from hypothesis import strategies as st

NAMES = Names(users={"U1": "Priya"})
T0 = 1_700_000_000


def _hit(position: int, root: int | None, has_replies: bool, score: float) -> Hit:
    ts = f"{T0 + 10 * position + 5}.000100"
    fields: dict[str, object] = {"channel": "C1", "ts": ts, "user_id": "U1", "text": f"m{position}"}
    if root is not None:
        fields |= {"thread_ts": f"{T0 + 10 * root}.000100", "is_reply": True}
    elif has_replies:
        fields |= {"reply_count": 2}
    return Hit(Message.model_validate(fields), NAMES, score, "")


HITS = st.lists(
    st.tuples(
        st.none() | st.integers(0, 4),  # a reply to one of five roots, or top-level
        st.booleans(),  # a top-level message with replies (its own thread)
        st.sampled_from([0.0, 0.25, 0.5, 0.5, 0.75, 1.0]),  # ties are common
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(spec=HITS, empty=st.sets(st.integers(0, 40)))
def test_blocks_come_in_the_eager_order_and_threads_are_read_when_reached(
    spec: list[tuple[int | None, bool, float]], empty: set[int]
) -> None:
    hits = [_hit(i, root, replies, score) for i, (root, replies, score) in enumerate(spec)]
    relevance = [hit.score for hit in hits]  # any order: the bot's own hits break score order
    read: list[str] = []

    def thread_of(root_ts: str) -> list[Message]:
        read.append(root_ts)
        if int(float(root_ts)) % 7 in {e % 7 for e in empty}:
            return []  # nothing of it cached
        return [hit.message for hit in hits if hit.message.root_ts == root_ts]

    eager = sorted(_blocks(hits, relevance, "#c", NAMES, thread_of), key=lambda b: -b[1])
    shown = [(b.block_id, b.block_type, b.source, b.text, r) for b, r in eager]
    root_of = {f"message:C1:{h.message.ts}": h.message.root_ts for h in hits}
    read.clear()
    taken = 0
    reached: set[str] = set()
    for block, score in _blocks_by_relevance(hits, relevance, "#c", NAMES, thread_of):
        assert (block.block_id, block.block_type, block.source, block.text, score) == shown[taken]
        taken += 1
        reached.add(block.block_id.split(":")[2] if block.block_type == "thread" else
                    root_of[block.block_id])  # fmt: skip
        # The threads read so far: those of the blocks reached, and those read up front
        # because a later hit of theirs ranks higher than their first.
        assert all(root in reached or _reordered(hits, relevance, root) for root in read)
    assert taken == len(shown)
    assert len(read) == len(set(read))  # each thread read once


def _reordered(hits: list[Hit], relevance: list[float], root_ts: str) -> bool:
    members = [i for i, h in enumerate(hits) if h.message.root_ts == root_ts and
               (h.message.is_reply or h.message.reply_count)]  # fmt: skip
    return any(relevance[i] > relevance[members[0]] for i in members[1:])
