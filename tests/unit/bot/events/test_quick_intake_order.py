"""The quick path's order under any interleaving: the intake thread takes whatever waits as one
batch, each event of it a submission of its own to the group committer (which may group
submissions of several batches and retries a failed group one submission at a time), so what
a channel's events leave in the store must still be what they leave applied one at a time, in
the order they came, wherever the bursts are cut."""

from __future__ import annotations

import asyncio
import copy
import itertools
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.core.channel_record import store_events
from chanctx.bot.events.quick_intake import QuickIntake
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.slack.intake import intake
from chanctx.cache.channel_store import SqliteChannelStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.slack_events import STATE, TEAM, envelope, message, ts

_channels = itertools.count(1)
# (kind, message number, argument): a post, a reply to message arg, an edit to text arg, a
# deletion, a reaction by user arg. Any order, an edit or a deletion before its post too: the
# store's outcome then depends on the order, which is what this holds.
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["post", "reply", "edit", "delete", "react", "unreact"]),
        st.integers(0, 4),
        st.integers(0, 2),
    ),
    min_size=1,
    max_size=40,
)


@pytest.fixture(scope="module")
def bot() -> Iterator[OfflineBot]:
    with OfflineBot(copy.deepcopy(STATE), channel_store=True) as offline:
        yield offline


def event_of(channel: str, step: int, op: tuple[str, int, int]) -> dict[str, Any]:
    kind, n, arg = op
    at, when = ts(n), ts(100 + step)
    if kind == "post":
        return message(at, f"message {n} says hello", channel=channel)
    if kind == "reply":
        root = ts(arg) if arg != n else ts(4 - n if n != 2 else 0)
        return message(at, f"reply {n} in a thread", channel=channel, thread_ts=root)
    if kind == "edit":
        edited = message(at, f"message {n} edited to {arg}", channel=channel)
        edited["edited"] = {"user": "U1", "ts": when}
        return {"type": "message", "subtype": "message_changed", "channel": channel,
                "channel_type": "channel", "message": edited, "ts": when, "event_ts": when}  # fmt: skip
    if kind == "delete":
        return {"type": "message", "subtype": "message_deleted", "channel": channel,
                "channel_type": "channel", "deleted_ts": at, "ts": when, "event_ts": when}  # fmt: skip
    return {"type": "reaction_added" if kind == "react" else "reaction_removed",
            "user": f"U{arg + 1}", "reaction": "eyes", "event_ts": when,
            "item": {"type": "message", "channel": channel, "ts": at}}  # fmt: skip


def held(store: SqliteChannelStore, channel: str) -> list[tuple[Any, ...]]:
    return [
        (m.ts, m.text, m.deleted, m.thread_ts, m.reply_count, [(r.name, r.users) for r in m.reactions])
        for m in store.messages(TEAM, channel, limit=100)
    ]  # fmt: skip


async def delivered(quick: QuickIntake, bodies: list[dict[str, Any]], cuts: list[int]) -> list[int]:
    """Every body taken in order, in bursts ending at ``cuts`` (a pause after each, so the
    intake thread takes them in several batches)."""
    tasks = []
    for n, body in enumerate(bodies):
        tasks.append(asyncio.ensure_future(quick.take(body)))
        if n in cuts:
            await asyncio.sleep(0)  # the burst's tasks queue their events, in order
            time.sleep(0.002)
    answers = await asyncio.gather(*tasks)
    return [200 if answer is None else answer for answer in answers]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_OPS, cuts=st.sets(st.integers(0, 39), max_size=8))
def test_any_interleaving_stores_what_the_events_store_one_at_a_time(
    bot: OfflineBot, ops: list[tuple[str, int, int]], cuts: set[int]
) -> None:
    assert bot.channels is not None
    channel = f"C{next(_channels):09d}"
    events = [event_of(channel, step, op) for step, op in enumerate(ops)]
    quick = QuickIntake(lambda team: bot.runtime)
    answers = asyncio.run(delivered(quick, [envelope(e) for e in events], sorted(cuts)))
    assert answers == [200] * len(events)
    with tempfile.TemporaryDirectory() as alone_dir:
        alone = SqliteChannelStore(Path(alone_dir), synchronous="NORMAL")
        try:
            for event in events:
                alone.write(store_events(TEAM, intake(event, bot.engine.me), event))
            assert held(bot.channels.store, channel) == held(alone, channel)
        finally:
            alone.close()
