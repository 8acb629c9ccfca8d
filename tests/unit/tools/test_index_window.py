"""The whole channel's window (count, oldest slot, newest slot), which the index keeps current
as messages come and go, equals one computed afresh from its columns after any mix of adds,
edits, removals and asks."""

from __future__ import annotations

from chanctx.context import Message, Names
from chanctx.tools import ChannelIndex
from chanctx.tools._columns import live_window
from hypothesis import given, settings
from hypothesis import strategies as st

CHANNEL = "C0WINDOW01"
NAMES = Names(users={"U1": "Ann"})
T0 = 1_772_366_400

# (what, second): add (or edit) the message at T0 + second, remove it, or ask for the window.
_step = st.tuples(st.sampled_from(["add", "edit", "remove", "ask"]), st.integers(0, 30))


def _message(second: int, text: str = "deploy") -> Message:
    return Message(channel=CHANNEL, ts=f"{T0 + second}.000100", user_id="U1", text=text)


@settings(max_examples=200, deadline=None)
@given(st.lists(_step, max_size=60))
def test_the_kept_window_equals_a_fresh_one(steps: list[tuple[str, int]]) -> None:
    index = ChannelIndex(CHANNEL)
    with index.lock:
        for what, second in steps:
            if what == "add":
                index.upsert(_message(second), NAMES)
            elif what == "edit":
                index.upsert(_message(second, "deploy failed"), NAMES)
            elif what == "remove":
                index.remove(_message(second).ts)
            else:
                assert index.window(None) == live_window(index.rows, len(index), None, ())
        assert index.window(None) == live_window(index.rows, len(index), None, ())
        if len(index):
            count, oldest, newest = index.window(None)
            assert count == len(index)
            keys = sorted(
                int(index.rows.key[s]) for s in range(index.capacity) if index.rows.live[s]
            )
            assert (int(index.rows.key[oldest]), int(index.rows.key[newest])) == (keys[0], keys[-1])
