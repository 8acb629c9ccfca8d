"""Events through the real Bolt App (Socket Mode form) against the fake Slack Web API."""

from __future__ import annotations

import copy
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import Answer, Turn
from chanctx.bot.replay.offline import OfflineBot

from tests.support.paths import ROOT
from tests.support.slack_events import (
    BOT_ID,
    BOT_USER,
    CHANNEL,
    DM,
    STATE,
    edit,
    envelope,
    mention_pair,
    message,
    reaction,
    ts,
)

# Slack's own payload samples, vendored with their license (tests/data/slack_samples/README.md).
SAMPLES = ROOT / "tests" / "data" / "slack_samples" / "events"
SAMPLE_NAMES = sorted(p.name for p in SAMPLES.glob("*.json"))
READS = {"conversations.history", "conversations.replies", "conversations.info", "users.info"}


@pytest.fixture
def bot() -> Iterator[OfflineBot]:
    with OfflineBot(copy.deepcopy(STATE), start_time=float(ts(0).split(".")[0])) as running:
        yield running


def turns(bot: OfflineBot) -> list[Turn]:
    return [result.turn for result in bot.runtime.runner.results]


def reads(bot: OfflineBot) -> int:
    return sum(n for method, n in bot.slack.call_counts().items() if method in READS)


def test_a_mention_is_answered_once_although_slack_sends_it_twice(bot: OfflineBot) -> None:
    for item in mention_pair(ts(10), "what is the status?"):
        bot.dispatch(item)
    assert [(t.channel, t.thread_ts, t.anchor_ts) for t in turns(bot)] == [
        (CHANNEL, ts(10), ts(10))
    ]


def test_a_retried_delivery_is_dropped(bot: OfflineBot) -> None:
    first = mention_pair(ts(10), "status?")[1]
    bot.dispatch(first)
    response = bot.dispatch(first)  # same event_id: Slack's retry after a slow ack
    assert response.status == 200
    assert len(turns(bot)) == 1


def test_thread_mention_is_answered_in_that_thread(bot: OfflineBot) -> None:
    root = message(ts(1), "Deploy failed on prod")
    bot.dispatch(envelope(root))
    bot.dispatch(envelope(message(ts(2), "Looking at logs", user="U2", thread_ts=root["ts"])))
    for item in mention_pair(ts(3), "summarize?", thread_ts=root["ts"]):
        bot.dispatch(item)
    (turn,) = turns(bot)
    assert turn.thread_ts == root["ts"] and turn.anchor_ts == ts(3)
    (result,) = bot.runtime.runner.results
    assert result.context is not None and result.context.thread is not None
    assert [r.text for r in result.context.thread.replies] == ["Looking at logs"]


def test_the_user_sees_work_in_progress(bot: OfflineBot) -> None:
    for item in mention_pair(ts(10), "status?"):
        bot.dispatch(item)
    eyes = [
        (c.method, c.params.get("name"))
        for c in bot.slack.calls
        if c.method.startswith("reactions.")
    ]
    assert eyes == [("reactions.add", "eyes"), ("reactions.remove", "eyes")]


def test_edits_deletions_bots_and_our_own_messages_never_trigger(bot: OfflineBot) -> None:
    original = message(ts(1), f"<@{BOT_USER}> first draft")
    bot.dispatch(envelope(original))
    bot.dispatch(envelope(edit(ts(2), original, f"<@{BOT_USER}> second draft")))
    bot.dispatch(
        envelope(
            {
                "type": "message",
                "subtype": "message_deleted",
                "channel": CHANNEL,
                "deleted_ts": ts(1),
                "hidden": True,
                "event_ts": ts(3),
                "ts": ts(3),
            }
        )
    )
    bot.dispatch(
        envelope(
            message(
                ts(4),
                f"<@{BOT_USER}> from a bot",
                user="",
                subtype="bot_message",
                bot_id="B0OTHER001",
                username="otherbot",
            )
        )
    )
    own = message(ts(5), f"I am <@{BOT_USER}>, here is the answer", user=BOT_USER, bot_id=BOT_ID)
    bot.dispatch(envelope(own))
    bot.dispatch(
        envelope(
            {
                "type": "app_mention",
                "user": BOT_USER,
                "text": own["text"],
                "ts": ts(5),
                "channel": CHANNEL,
                "event_ts": ts(5),
            }
        )
    )
    assert turns(bot) == []
    # ... but our own message is kept as the assistant's side of the conversation.
    stored = bot.engine.history.get(CHANNEL, ts(5))
    assert stored is not None and stored.is_self


def test_a_dm_is_answered_and_a_mention_inside_it_only_once(bot: OfflineBot) -> None:
    for item in mention_pair(ts(10), "hi there", channel=DM):
        bot.dispatch(item)
    bot.dispatch(envelope(message(ts(11), "and another question", channel=DM)))
    assert [(t.channel, t.anchor_ts) for t in turns(bot)] == [(DM, ts(10)), (DM, ts(11))]


def test_an_assistant_thread_shows_status_instead_of_a_reaction(bot: OfflineBot) -> None:
    bot.dispatch(
        envelope(message(ts(10), "Help me with the incident", channel=DM, thread_ts=ts(9)))
    )
    (turn,) = turns(bot)
    assert turn.assistant_thread and turn.thread_ts == ts(9)
    statuses = [
        c.params.get("status") for c in bot.slack.calls if c.method == "assistant.threads.setStatus"
    ]
    assert statuses[0] and statuses[-1] == ""
    assert not [c for c in bot.slack.calls if c.method.startswith("reactions.")]


def test_reactions_edits_and_deletions_reach_the_context(bot: OfflineBot) -> None:
    first = message(ts(1), "Rollback done.")
    bot.dispatch(envelope(first))
    bot.dispatch(envelope(reaction(ts(2), ts(1), "white_check_mark")))
    bot.dispatch(envelope(reaction(ts(3), ts(1), "white_check_mark", user="U1")))
    bot.dispatch(envelope(reaction(ts(4), ts(1), "white_check_mark", user="U1", added=False)))
    second = message(ts(5), "Typo heer")
    bot.dispatch(envelope(second))
    bot.dispatch(envelope(edit(ts(6), second, "Typo here")))
    bot.dispatch(envelope(message(ts(7), "oops wrong channel", user="U2")))
    bot.dispatch(
        envelope(
            {
                "type": "message",
                "subtype": "message_deleted",
                "channel": CHANNEL,
                "deleted_ts": ts(7),
                "hidden": True,
                "event_ts": ts(8),
                "ts": ts(8),
            }
        )
    )
    for item in mention_pair(ts(9), "anything new?"):
        bot.dispatch(item)
    (result,) = bot.runtime.runner.results
    assert result.context is not None
    adjacent = {a.snippet: a for a in result.context.snapshot.adjacent}
    assert adjacent["Rollback done."].reactions == [":white_check_mark: 1"]
    assert "Typo here" in adjacent and "Typo heer" not in adjacent
    assert "oops wrong channel" not in adjacent


def test_steady_state_mentions_cost_no_slack_reads(bot: OfflineBot) -> None:
    bot.dispatch(envelope(message(ts(1), "Deploy failed on prod")))
    bot.dispatch(envelope(message(ts(1, 500), "Looking", user="U2")))
    for item in mention_pair(ts(2), "first question"):
        bot.dispatch(item)
    warm = reads(bot)  # cold start: one conversations.history, one users.info per person
    assert bot.slack.call_counts().get("conversations.history") == 1
    for second in range(3, 8):
        bot.dispatch(envelope(message(ts(second * 10), f"update {second}", user="U2")))
        for item in mention_pair(ts(second * 10 + 1), f"question {second}"):
            bot.dispatch(item)
    assert len(turns(bot)) == 6
    assert reads(bot) == warm  # five more mentions, zero Slack reads


def test_cold_thread_is_fetched_once_then_kept_current_from_events() -> None:
    state = copy.deepcopy(STATE)
    root_ts = ts(-3_000)
    state["history"] = {
        CHANNEL: [
            {
                "type": "message",
                "user": "U2",
                "text": "Old incident thread",
                "ts": root_ts,
                "thread_ts": root_ts,
                "reply_count": 20,
                "latest_reply": ts(-2_000 + 19),
            },
            *[
                {
                    "type": "message",
                    "user": "U1",
                    "text": f"old reply {i}",
                    "ts": ts(-2_000 + i),
                    "thread_ts": root_ts,
                }
                for i in range(20)
            ],
        ]
    }
    with OfflineBot(state, start_time=float(START_SECONDS)) as bot:
        for item in mention_pair(ts(10), "what happened here?", thread_ts=root_ts):
            bot.dispatch(item)
        bot.dispatch(
            envelope(message(ts(20), "new reply after the answer", user="U2", thread_ts=root_ts))
        )
        for item in mention_pair(ts(30), "and now?", thread_ts=root_ts):
            bot.dispatch(item)
        counts = bot.slack.call_counts()
        assert counts.get("conversations.history") == 1
        replies_calls = counts.get("conversations.replies", 0)
        # 21 messages, 15 a page, read newest window first with at most a minute of waiting
        # per turn (one call a minute): the first mention's two calls and one more.
        assert 1 <= replies_calls <= 3
        last = bot.runtime.runner.results[-1].context
        assert last is not None and last.thread is not None
        texts = [r.text for r in last.thread.replies]
        assert texts[:20] == [f"old reply {i}" for i in range(20)]
        assert "new reply after the answer" in texts  # appended from the event, no refetch


START_SECONDS = int(ts(0).split(".")[0])


def old_thread_state() -> tuple[dict[str, Any], str]:
    """Slack state with a thread from before the bot started: a root and one reply."""
    state = copy.deepcopy(STATE)
    root_ts = ts(-100)
    root = {
        "type": "message",
        "user": "U2",
        "text": "Old thread",
        "ts": root_ts,
        "thread_ts": root_ts,
        "reply_count": 1,
    }
    reply = {
        "type": "message",
        "user": "U1",
        "text": "old reply",
        "ts": ts(-50),
        "thread_ts": root_ts,
    }
    state["history"] = {CHANNEL: [root, reply]}
    return state, root_ts


def test_rate_limited_thread_fetch_waits_for_retry_after_and_drops_nothing() -> None:
    state, root_ts = old_thread_state()
    with OfflineBot(state, start_time=float(START_SECONDS)) as bot:
        bot.slack.fail_next("conversations.replies", 1, status=429, retry_after=30)
        before = bot.clock.now
        for item in mention_pair(ts(10), "what happened?", thread_ts=root_ts):
            bot.dispatch(item)
        bot.dispatch(envelope(message(ts(11), "a later message", user="U2")))
        (result,) = bot.runtime.runner.results
        assert result.context is not None and result.context.thread is not None
        assert [r.text for r in result.context.thread.replies] == ["old reply"]
        assert bot.clock.now >= before + 30  # waited out Retry-After (virtual time)
        assert bot.engine.history.get(CHANNEL, ts(11)) is not None  # no event dropped


def test_degrade_policy_serves_what_it_has_and_says_so() -> None:
    state = copy.deepcopy(STATE)
    root_ts = ts(-100)
    state["history"] = {
        CHANNEL: [
            {
                "type": "message",
                "user": "U2",
                "text": "Old thread",
                "ts": root_ts,
                "thread_ts": root_ts,
                "reply_count": 5,
            },
        ]
    }
    with OfflineBot(state, start_time=float(START_SECONDS), overflow="degrade") as bot:
        bot.slack.fail_next("conversations.replies", 5, status=429, retry_after=60)
        bot.dispatch(envelope(message(ts(5), "seen live", user="U1", thread_ts=root_ts)))
        for item in mention_pair(ts(10), "status?", thread_ts=root_ts):
            bot.dispatch(item)
        (result,) = bot.runtime.runner.results
        assert result.context is not None and result.context.thread is not None
        assert [r.text for r in result.context.thread.replies] == ["seen live"]
        assert any("rate limit" in note for note in result.context.notes)


class _Blocking:
    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        self.started.set()
        self.release.wait(10)
        return Answer(text="done")


def test_events_keep_flowing_while_an_answer_is_in_progress() -> None:
    responder = _Blocking()
    with OfflineBot(
        copy.deepcopy(STATE), start_time=float(START_SECONDS), responder=responder
    ) as bot:
        for item in mention_pair(ts(10), "long question"):
            bot.dispatch(item, wait=False)
        assert responder.started.wait(10)
        # The answer is still running; other deliveries are acknowledged and recorded meanwhile.
        for second in range(11, 21):
            assert (
                bot.dispatch(envelope(message(ts(second), f"chatter {second}")), wait=False).status
                == 200
            )
        assert bot.engine.history.get(CHANNEL, ts(20)) is not None
        responder.release.set()
        bot.runtime.runner.drain(10)
        assert [p.get("text") for p in bot.slack.posted] == ["done"]
        assert bot.slack.posted[0].get("thread_ts") == ts(10)


def test_the_vendored_samples_are_all_there() -> None:
    assert len(SAMPLE_NAMES) == 16 and "AppMentionPayload.json" in SAMPLE_NAMES


@pytest.mark.slow
@pytest.mark.parametrize("sample", SAMPLE_NAMES)
def test_every_real_payload_shape_is_accepted_without_error_or_answer(
    sample: str, bot: OfflineBot, caplog: pytest.LogCaptureFixture
) -> None:
    payload: dict[str, Any] = json.loads((SAMPLES / sample).read_text())
    payload["type"] = "event_callback"  # the samples leave it blank
    payload["event_id"] = payload.get("event_id") or f"Ev-{sample}"
    with caplog.at_level(logging.DEBUG):
        response = bot.dispatch(payload)
    assert response.status == 200
    assert turns(bot) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [
        r.getMessage() for r in caplog.records
    ]


@pytest.mark.slow
def test_intake_is_not_blocked_while_an_answer_waits_on_slack() -> None:
    state, root_ts = old_thread_state()
    with OfflineBot(state, start_time=float(START_SECONDS)) as bot:
        bot.slack.slow_next("conversations.replies", 1, seconds=3)
        for item in mention_pair(ts(10), "what happened?", thread_ts=root_ts):
            bot.dispatch(item, wait=False)
        # The answer is now inside a slow conversations.replies call. Deliveries go on:
        for second in range(11, 16):
            bot.dispatch(
                envelope(message(ts(second), f"meanwhile {second}", user="U2")), wait=False
            )
        assert bot.engine.history.get(CHANNEL, ts(15)) is not None
        assert not bot.runtime.runner.results  # ... and the answer had not finished yet
        bot.runtime.runner.drain(30)
        (result,) = bot.runtime.runner.results
        assert result.context is not None and result.context.thread is not None
        assert [r.text for r in result.context.thread.replies] == ["old reply"]


def test_a_fetched_copy_never_resurrects_a_deleted_message(bot: OfflineBot) -> None:
    from chanctx.context import Message

    gone = message(ts(1), "to be deleted")
    bot.dispatch(envelope(gone))
    bot.dispatch(
        envelope(
            {
                "type": "message",
                "subtype": "message_deleted",
                "channel": CHANNEL,
                "deleted_ts": ts(1),
                "hidden": True,
                "event_ts": ts(2),
                "ts": ts(2),
            }
        )
    )
    stale = Message(channel=CHANNEL, ts=ts(1), user_id="U1", text="to be deleted")
    bot.engine._adopt([stale])  # what a fetch that raced the deletion would bring back
    assert bot.engine.history.get(CHANNEL, ts(1)) is None


def test_app_mention_before_its_message_event_costs_nothing_extra(bot: OfflineBot) -> None:
    bot.dispatch(envelope(message(ts(1), "warm the channel")))
    for item in mention_pair(ts(2), "first"):
        bot.dispatch(item)
    before = bot.slack.call_counts()
    message_event, mention = mention_pair(ts(10), "which came first?")
    bot.dispatch(mention)  # Slack does not promise the order of the two
    bot.dispatch(message_event)
    assert len(turns(bot)) == 2
    result = bot.runtime.runner.results[-1]
    assert result.error is None and result.context is not None
    assert result.context.snapshot.anchor.text == "@chanctx which came first?"
    assert reads(bot) == sum(n for m, n in before.items() if m in READS)  # no fetch for the anchor


def test_edited_mentions_and_other_bots_mentions_are_not_questions(bot: OfflineBot) -> None:
    bot.dispatch(
        envelope(
            {
                "type": "app_mention",
                "user": "U1",
                "text": f"<@{BOT_USER}> fixed typo",
                "ts": ts(1),
                "channel": CHANNEL,
                "event_ts": ts(5),
                "edited": {"user": "U1", "ts": ts(5)},
            }
        )
    )
    bot.dispatch(
        envelope(
            {
                "type": "app_mention",
                "bot_id": "B0OTHER001",
                "user": "U0OTHERBOT",
                "text": f"<@{BOT_USER}> deploy done",
                "ts": ts(6),
                "channel": CHANNEL,
                "event_ts": ts(6),
            }
        )
    )
    assert turns(bot) == []
