"""Threads in the engine: a root that left the history is still known from the thread-starter
cache (seed 003: 6 h, 2,000 roots), so a thread kept current by events is never fetched again
just because its root was evicted."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.replay.offline import OfflineBot

from tests.support.slack_events import CHANNEL, STATE, envelope, mention_pair, message, ts

ROOT = ts(1)


def test_a_thread_whose_root_left_the_history_is_answered_without_a_fetch() -> None:
    with OfflineBot(copy.deepcopy(STATE), history_per_channel=10) as bot:
        bot.dispatch(envelope(message(ROOT, "Checkout 502s since the deploy")))
        for n in range(3):
            reply = message(ts(2 + n), f"reply {n}", user="U2", thread_ts=ROOT)
            bot.dispatch(envelope(reply))
        for n in range(6):  # channel chatter: the root is the oldest, and goes first
            bot.dispatch(envelope(message(ts(10 + n), f"lunch plans {n}", user="U3")))
        for item in mention_pair(ts(20), "what broke?", thread_ts=ROOT):
            bot.dispatch(item)
        assert bot.engine.history.get(CHANNEL, ROOT) is None  # evicted by the bound
        (result,) = bot.runtime.runner.results
        assert result.context is not None and result.context.thread is not None
        assert result.context.thread.root.text == "Checkout 502s since the deploy"
        assert [r.text for r in result.context.thread.replies] == [
            "reply 0",
            "reply 1",
            "reply 2",
        ]
        assert bot.slack.call_counts().get("conversations.replies", 0) == 0
        assert result.context.notes == ()


def test_without_the_root_anywhere_the_thread_is_fetched_once() -> None:
    state = copy.deepcopy(STATE)
    state["history"] = {
        CHANNEL: [
            {"type": "message", "user": "U1", "text": "Old incident root", "ts": ROOT,
             "thread_ts": ROOT, "reply_count": 1},
            {"type": "message", "user": "U2", "text": "old reply", "ts": ts(2),
             "thread_ts": ROOT, "parent_user_id": "U1"},
        ]
    }  # fmt: skip
    with OfflineBot(state) as bot:
        for item in mention_pair(ts(20), "what happened here?", thread_ts=ROOT):
            bot.dispatch(item)
        for item in mention_pair(ts(40), "and now?", thread_ts=ROOT):
            bot.dispatch(item)
        first, second = bot.runtime.runner.results
        for result in (first, second):
            assert result.context is not None and result.context.thread is not None
            assert result.context.thread.replies[0].text == "old reply"
        assert bot.slack.call_counts()["conversations.replies"] == 1


def test_a_thread_fetched_whole_is_served_stale_with_a_note_when_a_refresh_is_limited() -> None:
    other = ts(300)
    state = copy.deepcopy(STATE)
    state["history"] = {
        CHANNEL: [
            {"type": "message", "user": "U1", "text": "Payments root", "ts": ROOT,
             "thread_ts": ROOT, "reply_count": 3},
            *[
                {"type": "message", "user": "U2", "text": f"old reply {n}", "ts": ts(2 + n),
                 "thread_ts": ROOT, "parent_user_id": "U1"}
                for n in range(3)
            ],
            {"type": "message", "user": "U1", "text": "Another old thread", "ts": other,
             "thread_ts": other, "reply_count": 1},
            {"type": "message", "user": "U2", "text": "its reply", "ts": ts(301),
             "thread_ts": other, "parent_user_id": "U1"},
        ]
    }  # fmt: skip
    # No waiting allowed: a refresh that the one-a-minute limit would delay is not made.
    settings = ContextSettings(max_wait_seconds=0)
    with OfflineBot(state, settings=settings, history_per_channel=6) as bot:
        for item in mention_pair(ts(400), "what happened?", thread_ts=ROOT):
            bot.dispatch(item)
        for n in range(8):  # chatter pushes the thread's replies out of the bounded history
            bot.dispatch(envelope(message(ts(410 + n), f"chatter {n}", user="U3")))
        # Six minutes on (the thread cache's 5 are over), another cold thread takes the
        # minute's conversations.replies call, then the first thread is asked about again.
        for item in mention_pair(ts(750), "and this one?", thread_ts=other):
            bot.dispatch(item)
        for item in mention_pair(ts(760), "anything new?", thread_ts=ROOT):
            bot.dispatch(item)
        first, _, third = bot.runtime.runner.results
        assert first.context is not None and first.context.notes == ()
        assert third.context is not None
        (note,) = third.context.notes
        assert "this thread comes from a copy fetched 6 min ago" in note
        assert bot.slack.call_counts()["conversations.replies"] == 2


def test_an_answer_shares_one_minute_of_waiting_between_its_context_and_its_tools(
    tmp_path: Path,
) -> None:
    from tests.unit.bot.claude.test_session import answer, tool_round

    big, small = ts(1), ts(200)
    history: list[dict[str, Any]] = [
        {"type": "message", "user": "U1", "text": "Big incident", "ts": big, "thread_ts": big,
         "reply_count": 40},
        {"type": "message", "user": "U1", "text": "Small one", "ts": small, "thread_ts": small,
         "reply_count": 2},
    ]  # fmt: skip
    history += [
        {"type": "message", "user": "U2", "text": f"update {n}", "ts": ts(2 + 4 * n),
         "thread_ts": big, "parent_user_id": "U1"}
        for n in range(40)
    ]  # fmt: skip
    history += [
        {"type": "message", "user": "U2", "text": f"note {n}", "ts": ts(201 + n),
         "thread_ts": small, "parent_user_id": "U1"}
        for n in range(2)
    ]  # fmt: skip
    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: history}
    cassette = [
        tool_round(("toolu_1", "channel_messages", {"thread_id": small})),
        answer("Both threads say the same."),
    ]
    with OfflineBot(
        state, claude=True, cassette=cassette, data_dir=tmp_path, start_time=float(ts(0)[:10])
    ) as bot:
        for item in mention_pair(ts(300), "what is the latest?", thread_ts=big):
            bot.dispatch(item)
        (result,) = bot.runtime.runner.results
        assert result.error is None and result.context is not None
        assert result.context.waited_s == 60  # the thread's second window took the minute
        (call,) = result.tool_calls
        # The tool's fetch had no waiting left: not made, and said so (not another minute).
        assert "could not be fetched yet" in call.output
        assert bot.slack.call_counts()["conversations.replies"] == 2
