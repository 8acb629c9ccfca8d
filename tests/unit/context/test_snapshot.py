"""ChannelSnapshot builder: anchor whole, nearest window, budget drops the farthest."""

from __future__ import annotations

import pytest
from chanctx.context import (
    ChannelSnapshot,
    FileRef,
    Message,
    Names,
    Reaction,
    build_channel_snapshot,
    default_counter,
    iso_from_ts,
    reaction_labels,
    wire_json,
)
from chanctx.context.render import text_of
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import chat_text, timelines, ts_at

COUNTER = default_counter()


def _snap(timeline: list[Message], index: int, **options: object) -> ChannelSnapshot:
    return build_channel_snapshot(timeline[index], timeline, channel_name="ops", **options)  # type: ignore[arg-type]


def _distance(snapshot: ChannelSnapshot, message_id: str) -> float:
    return abs(float(message_id) - float(snapshot.anchor.message_id))


@given(timelines(), st.data(), st.integers(0, 3_000), st.integers(0, 30))
def test_snapshot_fits_budget_and_window(
    timeline: list[Message], data: st.DataObject, budget: int, window: int
) -> None:
    index = data.draw(st.integers(0, len(timeline) - 1))
    snapshot = _snap(timeline, index, budget_tokens=budget, window=window)
    tokens = COUNTER.count(wire_json(snapshot))
    assert len(snapshot.adjacent) <= window
    if snapshot.adjacent:
        assert tokens <= budget
    else:  # only the anchor: it is never cut, whatever the budget
        assert snapshot.anchor.text == text_of(timeline[index], Names())


@pytest.mark.slow
@given(timelines(), st.data(), st.integers(0, 3_000))
def test_anchor_whole_and_adjacent_nearest_in_time_order(
    timeline: list[Message], data: st.DataObject, budget: int
) -> None:
    index = data.draw(st.integers(0, len(timeline) - 1))
    snapshot = _snap(timeline, index, budget_tokens=budget)
    anchor = timeline[index]
    assert snapshot.anchor.text == text_of(anchor, Names())
    assert snapshot.anchor.message_id == anchor.ts
    ids = [a.message_id for a in snapshot.adjacent]
    assert anchor.ts not in ids
    assert ids == sorted(ids, key=float)  # oldest to newest
    # Whatever was dropped is at least as far from the anchor as everything kept.
    kept = {*ids}
    dropped = [m.ts for m in timeline if m.ts not in kept and m.ts != anchor.ts]
    if kept and dropped:
        assert max(_distance(snapshot, i) for i in kept) <= min(
            _distance(snapshot, d) for d in dropped
        )


@given(timelines(), st.data())
def test_snapshot_round_trips_and_matches_sources(
    timeline: list[Message], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(timeline) - 1))
    snapshot = _snap(timeline, index, budget_tokens=100_000)
    assert ChannelSnapshot.model_validate_json(wire_json(snapshot)) == snapshot
    by_id = {m.ts: m for m in timeline}
    for adjacent in snapshot.adjacent:
        source = by_id[adjacent.message_id]
        assert adjacent.has_media == bool(source.files)
        assert adjacent.reactions == reaction_labels(source)
        assert len(adjacent.snippet) <= 153


def test_window_defaults_to_the_20_nearest() -> None:
    timeline = [
        Message(channel="C1", ts=ts_at(i * 10), user_id="U1", text=f"m{i}") for i in range(100)
    ]
    snapshot = _snap(timeline, 50, budget_tokens=100_000)
    assert [a.snippet for a in snapshot.adjacent] == [f"m{i}" for i in range(40, 61) if i != 50]


def test_budget_drops_the_farthest_first() -> None:
    timeline = [
        Message(channel="C1", ts=ts_at(i * 10), user_id="U1", text=f"note {i} " + "word " * 20)
        for i in range(41)
    ]
    full = _snap(timeline, 20, budget_tokens=100_000)
    tight = _snap(timeline, 20, budget_tokens=COUNTER.count(wire_json(full)) // 2)
    kept = [int(a.snippet.split()[1]) for a in tight.adjacent]
    assert 0 < len(kept) < 20
    assert max(abs(k - 20) for k in kept) <= min(
        abs(k - 20) for k in range(10, 31) if k not in kept and k != 20
    )


def test_reactions_sorted_by_count_then_name() -> None:
    message = Message(
        channel="C1",
        ts=ts_at(0),
        reactions=(
            Reaction(name="eyes", count=2),
            Reaction(name="white_check_mark", count=3),
            Reaction(name="+1", count=2),
            Reaction(name="gone", count=0),
        ),
    )
    assert reaction_labels(message) == [":white_check_mark: 3", ":+1: 2", ":eyes: 2"]


def test_thread_activity_counts_replies_in_the_hour_before_the_anchor() -> None:
    root = Message(
        channel="C1", ts=ts_at(0), thread_ts=ts_at(0), user_id="U1", text="Incident", reply_count=4
    )
    replies = [
        Message(channel="C1", ts=ts_at(t), thread_ts=root.ts, user_id="U2", text="r")
        for t in (60, 4_000, 6_000, 7_100)
    ]
    anchor = Message(channel="C1", ts=ts_at(7_200), user_id="U3", text="<@UBOT> summary?")
    snapshot = build_channel_snapshot(
        anchor,
        [root, anchor],
        channel_name="ops",
        replies_of=lambda ts: replies if ts == root.ts else [],
    )
    (adjacent,) = snapshot.adjacent
    assert adjacent.thread_activity is not None
    # (3600, 7200]: the replies at 4000, 6000 and 7100 count; the one at 60 does not.
    assert adjacent.thread_activity.model_dump() == {
        "reply_count": 4,
        "replies_last_1h": 3,
        "last_reply_ts": iso_from_ts(ts_at(7_100)),
    }


def test_anchor_in_a_thread_leaves_its_root_out_and_keeps_files() -> None:
    root = Message(
        channel="C1", ts=ts_at(0), thread_ts=ts_at(0), user_id="U1", text="root", reply_count=1
    )
    other = Message(channel="C1", ts=ts_at(30), user_id="U2", text="other")
    image = FileRef(artifact_id="F1", media_type="image/png", filename="graph.png", byte_length=123)
    anchor = Message(
        channel="C1", ts=ts_at(60), thread_ts=root.ts, user_id="U3", text="", files=(image,)
    )
    snapshot = build_channel_snapshot(anchor, [root, other], channel_name="ops")
    assert [a.message_id for a in snapshot.adjacent] == [other.ts]
    assert snapshot.anchor.thread_id == root.ts
    assert snapshot.anchor.media[0].artifact_id == "F1"
    assert snapshot.anchor.text == "[shared graph.png]"  # a file-only message is never blank


def test_field_names_match_seed_003() -> None:
    timeline = [Message(channel="C1", ts=ts_at(i), user_id="U1", text=str(i)) for i in range(3)]
    dumped = _snap(timeline, 1).model_dump()
    assert list(dumped) == ["schema_version", "channel", "anchor", "adjacent"]
    assert dumped["schema_version"] == "1.0"
    assert list(dumped["channel"]) == ["id", "name", "platform"]
    assert list(dumped["anchor"]) == ["message_id", "ts", "author", "text", "media", "thread_id"]
    assert list(dumped["adjacent"][0]) == [
        "message_id",
        "ts",
        "author",
        "snippet",
        "thread_activity",
        "has_media",
        "reactions",
    ]


@given(chat_text)
def test_deleted_messages_never_appear(text: str) -> None:
    alive = Message(channel="C1", ts=ts_at(1), user_id="U1", text=text)
    gone = Message(channel="C1", ts=ts_at(2), user_id="U1", text="", deleted=True)
    anchor = Message(channel="C1", ts=ts_at(3), user_id="U1", text="q")
    snapshot = build_channel_snapshot(anchor, [alive, gone, anchor], channel_name="ops")
    assert [a.message_id for a in snapshot.adjacent] == [alive.ts]
