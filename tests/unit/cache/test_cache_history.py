"""ChannelHistory: write-through store, thread bookkeeping, tombstones, bounds."""

from __future__ import annotations

import pytest
from chanctx.cache import ChannelHistory, ts_key
from chanctx.cache._channel import message_bytes
from chanctx.context import FileRef, InvalidTimestamp, Message, Reaction
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = 1_700_000_000


def ts(seconds: int, micros: int = 0) -> str:
    return f"{BASE + seconds}.{micros:06d}"


def top(at: int, text: str = "", *, channel: str = "C1", user: str = "U1", **kw: object) -> Message:
    return Message.model_validate(
        {"channel": channel, "ts": ts(at), "user_id": user, "text": text or f"m{at}", **kw}
    )


def reply(
    at: int, root: int, text: str = "", *, channel: str = "C1", user: str = "U2", **kw: object
) -> Message:
    return Message.model_validate(
        {
            "channel": channel,
            "ts": ts(at),
            "thread_ts": ts(root),
            "user_id": user,
            "text": text or f"r{at}",
            **kw,
        }
    )


def tss(messages: list[Message]) -> list[str]:
    return [m.ts for m in messages]


# -- basics -----------------------------------------------------------------------------------


def test_record_get_and_timeline_order_by_numeric_ts() -> None:
    h = ChannelHistory()
    late = Message(channel="C1", ts="1000.000000", text="late")
    early = Message(channel="C1", ts="999.100000", text="early")
    h.record(late)
    h.record(early)
    assert tss(h.timeline("C1")) == ["999.100000", "1000.000000"]  # as strings they'd be reversed
    assert h.get("C1", "999.100000") == early
    assert h.get("C1", "5.0") is None
    assert h.get("C2", "999.100000") is None
    assert ("C1", "1000.000000") in h and ("C1", "1.0") not in h and "C1" not in h
    assert ts_key("999.1") < ts_key("1000") and ts_key("1.5") == ts_key("1.500000")


def test_out_of_order_arrivals_end_up_sorted() -> None:
    h = ChannelHistory()
    for at in [5, 1, 9, 3, 7, 2, 8]:
        h.record(top(at))
    assert tss(h.timeline("C1")) == [ts(a) for a in [1, 2, 3, 5, 7, 8, 9]]


def test_recording_twice_changes_nothing_and_a_new_copy_replaces() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(reply(2, 1))
    h.record(reply(2, 1))
    h.record(top(1))
    assert h.count("C1") == 2
    root = h.get("C1", ts(1))
    assert root is not None and root.reply_count == 1
    h.record(reply(2, 1, "fixed"))
    assert [m.text for m in h.replies("C1", ts(1))] == ["fixed"]
    assert h.get("C1", ts(1)) == root


def test_timeline_holds_top_level_and_broadcasts_replies_hold_the_thread() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(reply(3, 1))
    h.record(reply(2, 1, is_broadcast=True))
    h.record(top(4))
    assert tss(h.timeline("C1")) == [ts(1), ts(2), ts(4)]
    assert tss(h.replies("C1", ts(1))) == [ts(2), ts(3)]
    assert h.replies("C1", ts(4)) == [] and h.replies("nope", ts(1)) == []
    assert tss(h.timeline("C1", limit=2)) == [ts(2), ts(4)]
    assert h.timeline("C1", limit=0) == [] and h.timeline("unknown") == []
    with pytest.raises(ValueError, match="-1"):
        h.timeline("C1", limit=-1)


# -- thread bookkeeping -----------------------------------------------------------------------


def test_new_replies_keep_root_metadata_current() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(reply(2, 1, user="U2"))
    h.record(reply(4, 1, user="U3"))
    h.record(reply(3, 1, user="U2"))  # out of order
    root = h.get("C1", ts(1))
    assert root is not None
    assert (root.reply_count, root.latest_reply, root.reply_users) == (3, ts(4), ("U2", "U3"))
    assert root.thread_ts == root.ts  # a root with replies names itself as the thread


def test_root_recorded_after_its_replies_counts_them() -> None:
    h = ChannelHistory()
    h.record(reply(3, 1, user="U3"))
    h.record(reply(2, 1, user="U2"))
    h.record(top(1))
    root = h.get("C1", ts(1))
    assert root is not None
    assert (root.reply_count, root.latest_reply, set(root.reply_users)) == (2, ts(3), {"U2", "U3"})
    # The platform's own count wins when it knows more than we saw.
    h.record(top(10, reply_count=7, latest_reply=ts(12), thread_ts=ts(10)))
    h.record(reply(11, 10))
    snapshot = h.get("C1", ts(10))
    assert snapshot is not None and snapshot.reply_count == 7


def test_backfilled_replies_are_not_counted_twice_but_live_ones_are() -> None:
    h = ChannelHistory()
    h.record(top(1, reply_count=3, latest_reply=ts(4), reply_users=("U2",), thread_ts=ts(1)))
    for at in (2, 3, 4):  # the replies the snapshot already counted
        h.record(reply(at, 1))
    root = h.get("C1", ts(1))
    assert root is not None and root.reply_count == 3
    h.record(reply(5, 1, user="U9"))  # live, after the snapshot
    root = h.get("C1", ts(1))
    assert root is not None
    assert (root.reply_count, root.latest_reply, root.reply_users) == (4, ts(5), ("U2", "U9"))
    h.record(top(10, reply_count=5, latest_reply=ts(11), thread_ts=ts(10)))  # none of them seen
    h.record(reply(12, 10))
    root = h.get("C1", ts(10))
    assert root is not None and (root.reply_count, root.latest_reply) == (6, ts(12))


def test_an_event_copy_of_the_root_keeps_the_count_we_kept() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(reply(2, 1))
    h.record(top(1, "edited via a full message event"))
    root = h.get("C1", ts(1))
    assert root is not None
    assert (root.text, root.reply_count, root.latest_reply) == (
        "edited via a full message event",
        1,
        ts(2),
    )


def test_deleting_replies_updates_the_root() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(reply(2, 1, user="U2"))
    h.record(reply(3, 1, user="U3"))
    h.record(reply(4, 1, user="U4"))
    gone = h.delete("C1", ts(4))
    assert gone is not None and gone.ts == ts(4)
    root = h.get("C1", ts(1))
    assert root is not None
    assert (root.reply_count, root.latest_reply, root.reply_users) == (2, ts(3), ("U2", "U3"))
    h.delete("C1", ts(2))
    h.delete("C1", ts(3))
    root = h.get("C1", ts(1))
    assert root is not None
    assert (root.reply_count, root.latest_reply, root.reply_users) == (0, None, ())
    assert h.replies("C1", ts(1)) == []


def test_deleting_a_reply_of_a_partly_known_thread_keeps_the_platform_count_honest() -> None:
    h = ChannelHistory()
    h.record(top(1, reply_count=5, latest_reply=ts(6), thread_ts=ts(1)))
    h.record(reply(5, 1))
    h.record(reply(6, 1))
    h.delete("C1", ts(6))
    root = h.get("C1", ts(1))
    assert root is not None and root.reply_count == 4  # three replies we never saw still exist
    assert root.latest_reply == ts(5)  # the newest we know of, not the deleted one


def test_a_reply_recorded_again_as_top_level_leaves_its_thread() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(reply(3, 1))
    h.record(top(3))  # a correction: the same ts, now top-level
    root = h.get("C1", ts(1))
    assert root is not None and root.reply_count == 0 and h.replies("C1", ts(1)) == []
    assert tss(h.timeline("C1")) == [ts(1), ts(3)]


def test_deleting_a_root_with_replies_leaves_a_tombstone() -> None:
    h = ChannelHistory()
    h.record(top(1, files=(FileRef(artifact_id="F1"),)))
    h.record(reply(2, 1))
    before = h.get("C1", ts(1))
    assert h.delete("C1", ts(1)) == before
    stone = h.get("C1", ts(1))
    assert stone is not None and stone.deleted and stone.text == "" and stone.files == ()
    assert stone.reply_count == 1
    assert h.timeline("C1") == []  # not shown in the channel
    assert tss(h.replies("C1", ts(1))) == [ts(2)]  # but the thread stays reachable
    assert h.delete("C1", ts(1)) is None  # already deleted
    assert h.apply_edit("C1", ts(1), text="back from the dead") == stone
    h.delete("C1", ts(2))  # the last reply goes: so does the tombstone
    assert h.get("C1", ts(1)) is None and h.count("C1") == 0


def test_a_root_whose_replies_we_never_saw_still_leaves_a_tombstone() -> None:
    h = ChannelHistory()
    h.record(top(1, reply_count=3, latest_reply=ts(4), thread_ts=ts(1)))
    h.delete("C1", ts(1))
    stone = h.get("C1", ts(1))
    assert stone is not None and stone.deleted and stone.reply_count == 3


def test_deleting_a_root_without_replies_removes_it_and_unknowns_are_none() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.record(top(2))
    assert h.delete("C1", ts(1)) is not None
    assert tss(h.timeline("C1")) == [ts(2)] and h.count("C1") == 1
    assert h.delete("C1", ts(1)) is None
    assert h.delete("C1", ts(99)) is None
    assert h.delete("C9", ts(2)) is None


# -- edits and reactions ----------------------------------------------------------------------


def test_apply_edit() -> None:
    h = ChannelHistory()
    h.record(top(1, files=(FileRef(artifact_id="F1"),)))
    updated = h.apply_edit("C1", ts(1), text="new", edited_ts=ts(5))
    assert updated is not None and (updated.text, updated.edited_ts) == ("new", ts(5))
    assert updated.files == (FileRef(artifact_id="F1"),)  # files=None keeps them
    assert h.get("C1", ts(1)) == updated
    cleared = h.apply_edit("C1", ts(1), text="newer", files=())
    assert cleared is not None and cleared.files == () and cleared.edited_ts == ts(5)
    assert h.apply_edit("C1", ts(2), text="x") is None
    assert h.apply_edit("C2", ts(1), text="x") is None
    with pytest.raises(InvalidTimestamp):
        h.apply_edit("C1", ts(1), text="x", edited_ts="yesterday")


def test_reactions_count_each_user_once_and_vanish_at_zero() -> None:
    h = ChannelHistory()
    h.record(top(1))
    h.add_reaction("C1", ts(1), "eyes", "U1")
    h.add_reaction("C1", ts(1), "eyes", "U1")
    msg = h.add_reaction("C1", ts(1), "eyes", "U2")
    assert msg is not None and msg.reactions == (
        Reaction(name="eyes", count=2, users=("U1", "U2")),
    )
    h.add_reaction("C1", ts(1), "tada", "U1")
    msg = h.remove_reaction("C1", ts(1), "eyes", "U1")
    assert msg is not None and msg.reactions[0] == Reaction(name="eyes", count=1, users=("U2",))
    h.remove_reaction("C1", ts(1), "eyes", "U1")  # not there any more: no change
    msg = h.remove_reaction("C1", ts(1), "eyes", "U2")
    assert msg is not None and [r.name for r in msg.reactions] == ["tada"]
    assert h.remove_reaction("C1", ts(1), "fire", "U1") == msg
    assert h.add_reaction("C1", ts(9), "eyes", "U1") is None
    assert h.remove_reaction("C9", ts(1), "eyes", "U1") is None


def test_reaction_counts_from_the_platform_may_list_fewer_users() -> None:
    h = ChannelHistory()
    h.record(top(1, reactions=(Reaction(name="+1", count=3, users=("U1",)),)))
    msg = h.remove_reaction("C1", ts(1), "+1", "U7")  # one of the two unlisted users
    assert msg is not None and msg.reactions == (Reaction(name="+1", count=2, users=("U1",)),)
    msg = h.add_reaction("C1", ts(1), "+1", "U8")
    assert msg is not None and msg.reactions[0].count == 3


# -- bounds -----------------------------------------------------------------------------------


def test_per_channel_bound_evicts_the_oldest_by_ts() -> None:
    h = ChannelHistory(max_messages_per_channel=3)
    for at in [2, 4, 3, 5]:
        h.record(top(at))
    assert tss(h.timeline("C1")) == [ts(3), ts(4), ts(5)]
    h.record(top(1))  # older than everything held: dropped at once
    assert tss(h.timeline("C1")) == [ts(3), ts(4), ts(5)] and h.count("C1") == 3


def test_evicting_a_reply_is_not_deleting_it() -> None:
    h = ChannelHistory(max_messages_per_channel=3)
    h.record(top(1))
    h.record(reply(2, 1))
    h.record(top(3))
    h.record(top(4))  # evicts the root
    h.record(top(5))  # evicts the reply
    assert h.get("C1", ts(1)) is None and h.replies("C1", ts(1)) == []
    h2 = ChannelHistory(max_messages_per_channel=2)
    h2.record(reply(2, 1))
    h2.record(top(5))
    h2.record(top(1, reply_count=1, latest_reply=ts(2), thread_ts=ts(1)))  # evicts the reply
    h2.record(top(6))
    assert h2.get("C1", ts(1)) is None  # the root itself is now the oldest


def test_reply_count_survives_eviction_of_replies() -> None:
    h = ChannelHistory(max_messages_per_channel=3)
    h.record(top(10))
    h.record(reply(11, 10))
    h.record(reply(12, 10))
    h.record(top(1))  # older than all: dropped
    h.record(top(20))  # evicts the root (ts 10)
    assert h.get("C1", ts(10)) is None
    h3 = ChannelHistory(max_messages_per_channel=2)
    h3.record(reply(1, 0))
    h3.record(top(5))
    h3.record(reply(6, 5))  # evicts reply 1 of the unknown root 0
    root = h3.get("C1", ts(5))
    assert root is not None and root.reply_count == 1


def test_channel_bound_evicts_the_least_recently_used() -> None:
    h = ChannelHistory(max_channels=2)
    h.record(top(1, channel="A"))
    h.record(top(1, channel="B"))
    assert h.timeline("A")  # a read makes A the most recent
    h.record(top(1, channel="C"))
    assert h.channels() == ["A", "C"]
    assert h.count("B") == 0 and h.get("B", ts(1)) is None
    h.delete("A", ts(1))  # a write uses A too
    h.record(top(2, channel="D"))
    assert h.channels() == ["A", "D"]
    assert h.get("Z", ts(1)) is None and h.channels() == ["A", "D"]  # reads create nothing


def test_a_long_in_order_stream_stays_bounded_and_sorted() -> None:
    h = ChannelHistory(max_messages_per_channel=5_000)
    for at in range(20_000):
        h.record(top(at))
        if at % 7 == 3:  # a reply half a second later, to the message three seconds back
            h.record(Message(channel="C1", ts=ts(at, 500_000), thread_ts=ts(at - 3)))
    timeline = h.timeline("C1")
    assert h.count("C1") == 5_000
    assert timeline[-1].ts == ts(19_999)
    last = max(at for at in range(20_000) if at % 7 == 3)
    root = h.get("C1", ts(last - 3))
    assert root is not None and root.reply_count == 1 and root.latest_reply == ts(last, 500_000)
    keys = [ts_key(m.ts) for m in timeline]
    assert keys == sorted(set(keys))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_messages_per_channel": 0},
        {"max_messages_per_channel": -5},
        {"max_channels": 0},
        {"max_channels": True},
        {"max_channels": 2.5},
    ],
)
def test_constructor_rejects_non_positive_ints(kwargs: dict[str, object]) -> None:
    ((name, value),) = kwargs.items()
    with pytest.raises(ValueError, match=f"{name}.*{value!r}"):
        ChannelHistory(**kwargs)  # type: ignore[arg-type]


def test_malformed_ts_is_a_clear_error_not_a_silent_miss() -> None:
    h = ChannelHistory()
    with pytest.raises(InvalidTimestamp, match="not-a-ts"):
        h.get("C1", "not-a-ts")


# -- properties against a reference model -----------------------------------------------------

# A fixed shape per ts: ts offsets around 999 -> 1000 seconds so digit counts differ.
_Shape = tuple[int, int | None]  # (offset, root offset or None for a top-level message)


def _ts(offset: int) -> str:
    return f"{990 + offset}.{(offset * 7919) % 1_000_000:06d}"


@st.composite
def shapes(draw: st.DrawFn) -> list[_Shape]:
    roots = draw(st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True))
    shapes: dict[int, int | None] = dict.fromkeys(roots)
    for root, delta in draw(st.lists(st.tuples(st.sampled_from(roots), st.integers(1, 30)))):
        shapes.setdefault(root + delta, root)
    return sorted(shapes.items())


@st.composite
def scenarios(draw: st.DrawFn) -> list[tuple[str, Message]]:
    pool = draw(shapes())
    ops = []
    for _ in range(draw(st.integers(0, 60))):
        offset, root = draw(st.sampled_from(pool))
        if draw(st.integers(0, 3)) == 0:
            ops.append(("delete", Message(channel="C1", ts=_ts(offset))))
            continue
        ops.append(
            (
                "record",
                Message(
                    channel="C1",
                    ts=_ts(offset),
                    thread_ts=None if root is None else _ts(root),
                    user_id=f"U{offset % 3}",  # a ts's author never changes
                    text=draw(st.sampled_from(["a", "b", "c"])),
                    is_broadcast=root is not None and draw(st.booleans()),
                ),
            )
        )
    return ops


class Reference:
    """The obvious model: a dict of what was recorded, minus what was deleted."""

    def __init__(self) -> None:
        self.msgs: dict[int, Message] = {}
        self.tombstones: set[int] = set()

    def replies_of(self, root_key: int) -> list[Message]:
        found = [m for m in self.msgs.values() if m.is_reply and ts_key(m.root_ts) == root_key]
        return sorted(found, key=lambda m: ts_key(m.ts))

    def apply(self, op: str, msg: Message) -> None:
        key = ts_key(msg.ts)
        if op == "record":
            self.msgs[key] = msg
            self.tombstones.discard(key)
            return
        old = self.msgs.get(key)
        if old is None or key in self.tombstones:
            return
        if old.is_reply:
            del self.msgs[key]
            root_key = ts_key(old.root_ts)
            if root_key in self.tombstones and not self.replies_of(root_key):
                del self.msgs[root_key]
                self.tombstones.discard(root_key)
        elif self.replies_of(key):
            self.tombstones.add(key)
        else:
            del self.msgs[key]

    def timeline(self) -> list[Message]:
        shown = [m for k, m in self.msgs.items() if m.in_channel and k not in self.tombstones]
        return sorted(shown, key=lambda m: ts_key(m.ts))


def _view(messages: list[Message]) -> list[tuple[str, str, bool]]:
    return [(m.ts, m.text, m.is_broadcast) for m in messages]


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_history_matches_the_reference_model(ops: list[tuple[str, Message]]) -> None:
    h, ref = ChannelHistory(), Reference()
    for op, msg in ops:
        if op == "record":
            h.record(msg)
        else:
            h.delete(msg.channel, msg.ts)
        ref.apply(op, msg)
    timeline = h.timeline("C1")
    keys = [ts_key(m.ts) for m in timeline]
    assert keys == sorted(set(keys))
    assert _view(timeline) == _view(ref.timeline())
    assert h.count("C1") == len(ref.msgs)
    for key, expected in ref.msgs.items():
        got = h.get("C1", expected.ts)
        assert got is not None and got.deleted == (key in ref.tombstones)
        if expected.is_reply:
            continue
        known = ref.replies_of(key)
        assert _view(h.replies("C1", expected.ts)) == _view(known)
        # Every root here started with no replies, so its metadata is exactly what we saw.
        assert got.reply_count == len(known)
        assert got.latest_reply == (known[-1].ts if known else None)
        assert set(got.reply_users) == {m.user_id for m in known}


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.integers(1, 8))
def test_bounded_history_stays_sorted_bounded_and_truthful(
    ops: list[tuple[str, Message]], bound: int
) -> None:
    h, ref = ChannelHistory(max_messages_per_channel=bound), Reference()
    for op, msg in ops:
        if op == "record":
            h.record(msg)
        else:
            h.delete(msg.channel, msg.ts)
        ref.apply(op, msg)
        timeline = h.timeline("C1")
        keys = [ts_key(m.ts) for m in timeline]
        assert keys == sorted(set(keys))
        assert h.count("C1") <= bound
        # What is shown is what the unbounded model shows (never stale or resurrected text).
        assert set(_view(timeline)) <= set(_view(ref.timeline()))


@settings(max_examples=200, deadline=None)
@given(scenarios(), st.integers(1, 8))
def test_bounded_history_without_deletes_keeps_the_newest(
    ops: list[tuple[str, Message]], bound: int
) -> None:
    h, ref = ChannelHistory(max_messages_per_channel=bound), Reference()
    for op, msg in ops:
        if op == "record":
            h.record(msg)
            ref.apply(op, msg)
    newest = sorted(ref.msgs)[-bound:]
    assert [ts_key(m.ts) for m in h.timeline("C1")] == [k for k in newest if ref.msgs[k].in_channel]
    assert h.count("C1") == len(newest)


def test_messages_lists_top_level_and_replies_in_order_without_tombstones() -> None:
    history = ChannelHistory()
    root = Message(channel="C1", ts="100.000001", thread_ts="100.000001", text="root")
    reply = Message(channel="C1", ts="101.000001", thread_ts="100.000001", text="reply")
    other = Message(channel="C1", ts="99.000001", text="before")
    for message in (reply, root, other):
        history.record(message)
    assert [m.text for m in history.messages("C1")] == ["before", "root", "reply"]
    history.delete("C1", "100.000001")  # the root has a reply: it becomes a tombstone
    assert [m.text for m in history.messages("C1")] == ["before", "reply"]
    assert history.messages("C9") == []


# -- the byte bound -------------------------------------------------------------------------------

MB = 2**20


def test_two_hundred_one_megabyte_messages_hold_the_byte_bound_not_200_mb() -> None:
    h = ChannelHistory(max_bytes=32 * MB)
    for n in range(200):
        h.record(top(n, "x" * MB))
    assert h.bytes <= 32 * MB
    kept = h.timeline("C1")
    assert len(kept) == 31 and kept[-1].ts == ts(199)  # the newest stay, the oldest went
    assert h.bytes == sum(message_bytes(m) for m in kept)


def test_the_byte_bound_takes_from_the_least_recently_used_channel_first() -> None:
    h = ChannelHistory(max_bytes=5 * MB)
    for n in range(3):
        h.record(top(n, "q" * MB, channel="Cquiet"))
    for n in range(3):
        h.record(top(n, "b" * MB, channel="Cbusy"))
    assert h.count("Cbusy") == 3 and h.count("Cquiet") == 1  # the quiet channel paid
    assert h.get("Cquiet", ts(2)) is not None  # its newest is what it kept
    for n in range(3, 6):
        h.record(top(n, "b" * MB, channel="Cbusy"))
    assert h.channels() == ["Cbusy"] and h.count("Cbusy") == 4


def test_one_message_over_the_whole_bound_is_kept_alone() -> None:
    h = ChannelHistory(max_bytes=MB)
    h.record(top(0, "small"))
    h.record(top(1, "x" * 2 * MB))
    assert tss(h.timeline("C1")) == [ts(1)]


@st.composite
def byte_scenarios(draw: st.DrawFn) -> list[tuple[str, Message]]:
    ops: list[tuple[str, Message]] = []
    for _ in range(draw(st.integers(0, 60))):
        channel = draw(st.sampled_from(["C1", "C2", "C3"]))
        at = draw(st.integers(0, 30))
        root = draw(st.one_of(st.none(), st.integers(0, 30)))
        kind = draw(st.sampled_from(["record", "record", "delete", "edit", "react", "unreact"]))
        text = "t" * draw(st.integers(0, 3_000))
        if root is not None and root < at:
            msg = reply(at, root, text or "r", channel=channel)
        else:
            msg = top(at, text or "m", channel=channel)
        ops.append((kind, msg))
    return ops


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(byte_scenarios(), st.sampled_from([2_000, 6_000, 20_000]))
def test_the_byte_count_is_exact_and_the_bound_holds_after_every_write(
    ops: list[tuple[str, Message]], max_bytes: int
) -> None:
    h = ChannelHistory(max_bytes=max_bytes)
    for kind, msg in ops:
        if kind == "record":
            h.record(msg)
        elif kind == "delete":
            h.delete(msg.channel, msg.ts)
        elif kind == "edit":
            h.apply_edit(msg.channel, msg.ts, text=msg.text + "!")
        elif kind == "react":
            h.add_reaction(msg.channel, msg.ts, "eyes", "U9")
        else:
            h.remove_reaction(msg.channel, msg.ts, "eyes", "U9")
        stored = [m for c in h.channels() for m in h.messages(c)] + [
            m for c in h.channels() for m in _tombstones(h, c)
        ]
        assert h.bytes == sum(message_bytes(m) for m in stored)
        # Over the bound only when a single message is left, the one just written.
        assert h.bytes <= max_bytes or sum(h.count(c) for c in h.channels()) == 1


def _tombstones(h: ChannelHistory, channel: str) -> list[Message]:
    shown = {m.ts for m in h.messages(channel)}
    found = []
    for n in range(31):
        m = h.get(channel, ts(n))
        if m is not None and m.ts not in shown:
            found.append(m)
    return found


def test_replies_share_their_roots_ts_string() -> None:
    """Each reply event brings its own copy of the thread's ts; history keeps one string."""
    h = ChannelHistory()
    root_ts = "".join(["1781020800", ".000100"])
    h.record(Message(channel="C1", ts=root_ts, text="root"))
    copy = "".join(["1781020800.", "000100"])
    assert copy == root_ts and copy is not root_ts
    h.record(Message(channel="C1", ts="1781020801.000100", thread_ts=copy, text="reply"))
    stored = h.get("C1", "1781020801.000100")
    assert stored is not None and stored.thread_ts is root_ts
    assert h.replies("C1", root_ts) == [stored]
