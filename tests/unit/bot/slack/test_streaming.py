"""Streamed answers: the user sees the answer grow (chat.startStream / appendStream / stopStream
through slack_sdk's chat_stream), falls back to one post where Slack does not stream, and
Slack's faults mid-stream never leave a broken or a second answer.

Crashes mid-stream (kill -9 of a real process) are tests/process/bot/slack/test_process_streaming.py's.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import Answer, Turn, turn_id
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.slack.feedback_buttons import ACTION_ID
from chanctx.bot.slack.poster import EVENT_TYPE
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.support.slack_events import (
    BOT_USER,
    CHANNEL,
    DM,
    STATE,
    TEAM,
    envelope,
    mention_pair,
    message,
    ts,
)

START = float(ts(0).split(".")[0])
# About 1,100 characters in five paragraphs: a start, a few appends and a stop.
ANSWER = "\n\n".join(
    f"**Step {n}.** The deploy at 14:0{n} changed the checkout service; "
    "Ana rolled it back after the error rate reached 12% and the alerts stopped. " * 2
    for n in range(1, 6)
)


class Answers:
    def __init__(self, text: str = ANSWER) -> None:
        self.text = text

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        return Answer(text=self.text)


def new_bot(tmp_path: Path, **options: Any) -> OfflineBot:
    return OfflineBot(
        copy.deepcopy(STATE), responder=Answers(), start_time=START, data_dir=tmp_path, **options
    )


def ask(bot: OfflineBot, at: str, text: str = "what broke checkout?") -> None:
    for item in mention_pair(at, text):
        bot.dispatch(item)


def bot_messages(bot: OfflineBot, channel: str = CHANNEL) -> list[dict[str, Any]]:
    return [m for m in bot.slack.messages(channel) if m.get("user") == BOT_USER]


def methods(bot: OfflineBot) -> list[str]:
    return [c["method"] for c in bot.slack.sent]


def test_the_answer_grows_in_one_message_and_ends_with_metadata_and_buttons(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        ask(bot, ts(10))
        calls = bot.slack.sent
        assert methods(bot)[0] == "chat.startStream" and methods(bot)[-1] == "chat.stopStream"
        assert methods(bot).count("chat.appendStream") >= 2  # the user saw it grow
        assert len({c["ts"] for c in calls}) == 1  # one message
        seen = [len(c["text"]) for c in calls]
        assert seen == sorted(seen) and seen[0] < len(ANSWER) and seen[-1] == len(ANSWER)
        assert "".join(c["markdown_text"] or "" for c in calls) == ANSWER
        (answer,) = bot_messages(bot)
        assert answer["text"] == ANSWER and answer["thread_ts"] == ts(10)
        payload = answer["metadata"]["event_payload"]
        assert answer["metadata"]["event_type"] == EVENT_TYPE and payload["turn"] == turn_id(
            bot.runtime.runner.results[0].turn
        )
        (buttons,) = answer["blocks"]
        assert buttons["type"] == "context_actions"
        assert buttons["elements"][0]["action_id"] == ACTION_ID
        # Outside a DM a stream names its recipient, as Slack requires.
        start = next(c for c in bot.slack.calls if c.method == "chat.startStream")
        assert start.params["recipient_team_id"] == TEAM
        assert start.params["recipient_user_id"] == "U1"
        assert bot.slack.streaming() == []
        assert bot.runtime.turns.outbox() == [] and bot.runtime.turns.pending() == []


def test_a_dm_streams_without_naming_a_recipient(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        bot.dispatch(envelope(message(ts(10), "what broke checkout?", channel=DM)))
        (answer,) = bot_messages(bot, DM)
        assert answer["text"] == ANSWER
        assert "chat.stopStream" in methods(bot)


def test_where_slack_does_not_stream_the_answer_is_posted_once_and_no_stream_is_tried_again(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.startStream", 1, status=200, error="unknown_method")
        ask(bot, ts(10))
        ask(bot, ts(20), "and the database?")
        assert methods(bot) == ["chat.postMessage", "chat.postMessage"]
        assert bot.slack.call_counts()["chat.startStream"] == 1
        first, second = bot_messages(bot)
        assert first["text"] == second["text"] == ANSWER
        # Without markdown_text (it never goes with blocks), the Markdown is a markdown block.
        assert [b["type"] for b in first["blocks"]] == ["markdown", "context_actions"]
        assert first["blocks"][0]["text"] == ANSWER


def test_a_channel_refusing_streams_gets_a_post_and_the_next_answer_still_streams(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.startStream", 1, status=200, error="channel_type_not_supported")
        ask(bot, ts(10))
        ask(bot, ts(20), "and the database?")
        assert methods(bot)[0] == "chat.postMessage" and methods(bot)[-1] == "chat.stopStream"
        assert [m["text"] for m in bot_messages(bot)] == [ANSWER, ANSWER]


def test_a_429_on_an_append_is_waited_out_and_the_stream_goes_on(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.appendStream", 2, status=429, retry_after=0)
        ask(bot, ts(10))
        (answer,) = bot_messages(bot)
        assert answer["text"] == ANSWER  # nothing doubled, nothing lost
        assert "chat.update" not in methods(bot)
        assert (
            bot.slack.call_counts()["chat.appendStream"]
            == methods(bot).count("chat.appendStream") + 2
        )


def test_a_500_on_an_append_is_never_continued_the_message_is_replaced_whole(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.appendStream", 1, status=500)
        ask(bot, ts(10))
        (answer,) = bot_messages(bot)  # one message: the stream, finished by an update
        assert answer["text"] == ANSWER
        assert answer["metadata"]["event_payload"]["part"] == 0
        assert methods(bot)[-1] == "chat.update"
        assert bot.slack.call_counts()["chat.appendStream"] == 1  # not tried again
        assert [b["type"] for b in answer["blocks"]] == ["markdown", "context_actions"]
        assert bot.slack.streaming() == []
        (result,) = bot.runtime.runner.results
        assert result.error is None and result.reply_ts == [answer["ts"]]


def test_an_ambiguous_start_adopts_the_stream_slack_made_instead_of_posting_twice(
    tmp_path: Path,
) -> None:
    with new_bot(tmp_path) as bot:
        # Slack started the stream, then the answer was lost (a 500): the message is ours.
        bot.slack.fail_next("chat.startStream", 1, status=500, applied=True)
        ask(bot, ts(10))
        assert methods(bot) == ["chat.startStream", "chat.stopStream", "chat.update"]
        (answer,) = bot_messages(bot)
        assert answer["text"] == ANSWER and answer["metadata"]["event_payload"]["part"] == 0
        # Not applied: nothing to adopt, so the answer is posted.
        bot.slack.fail_next("chat.startStream", 1, status=500)
        ask(bot, ts(20), "and the database?")
        assert methods(bot)[3:] == ["chat.postMessage"]
        assert [m["text"] for m in bot_messages(bot)] == [ANSWER, ANSWER]


def test_a_stream_the_user_stopped_stays_as_they_left_it(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        original = bot.slack._append_stream

        def stop_after_first(params: dict[str, Any]) -> dict[str, Any]:
            answer = original(params)
            bot.slack.stop_by_user(str(params["channel"]), str(params["ts"]))
            return answer

        bot.slack._handlers["chat.appendStream"] = stop_after_first
        ask(bot, ts(10))
        (answer,) = bot_messages(bot)
        assert 0 < len(answer["text"]) < len(ANSWER)  # what they chose to keep
        assert "chat.update" not in methods(bot) and "chat.postMessage" not in methods(bot)
        assert bot.runtime.turns.outbox() == [] and bot.runtime.turns.pending() == []


def test_the_fake_enforces_the_stream_methods_rules() -> None:
    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: [{"type": "message", "user": "U1", "text": "q", "ts": ts(1)}]}
    clock = [START + 10]
    with FakeSlackAPI(state, clock=lambda: clock[0]) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)

        def error(call: Any, **kwargs: Any) -> str:
            try:
                call(**kwargs)
            except SlackApiError as failure:
                return str(failure.response["error"])
            raise AssertionError("accepted")

        start = client.chat_startStream
        assert error(start, channel=CHANNEL, thread_ts=ts(1)) == "missing_recipient_team_id"
        assert (
            error(start, channel=CHANNEL, thread_ts=ts(1), recipient_team_id=TEAM)
            == "missing_recipient_user_id"
        )
        assert error(start, channel="C0NOWHERE", thread_ts=ts(1)) == "channel_not_found"
        recipients = {"recipient_team_id": TEAM, "recipient_user_id": "U1"}
        assert error(start, channel=CHANNEL, thread_ts="", **recipients) == "invalid_arguments"
        long = "x" * 12_001
        assert (
            error(start, channel=CHANNEL, thread_ts=ts(1), markdown_text=long, **recipients)
            == "msg_too_long"
        )
        bad_chunks = [{"type": "poem", "text": "x"}]
        assert (
            error(start, channel=CHANNEL, thread_ts=ts(1), chunks=bad_chunks, **recipients)
            == "invalid_chunks"
        )
        stream = start(channel=CHANNEL, thread_ts=ts(1), markdown_text="**Hel", **recipients)
        at = stream["ts"]
        assert error(client.chat_appendStream, channel=CHANNEL, ts=at) == "no_text"
        assert error(
            client.chat_appendStream, channel=CHANNEL, ts="1.000000", markdown_text="x"
        ) == ("message_not_found")
        assert (
            error(client.chat_appendStream, channel=CHANNEL, ts=ts(1), markdown_text="x")
            == "message_not_owned_by_app"
        )
        client.chat_appendStream(
            channel=CHANNEL, ts=at, chunks=[{"type": "markdown_text", "text": "lo**"}]
        )
        bad_blocks = [{"type": "context_actions", "elements": []}]
        assert error(client.chat_stopStream, channel=CHANNEL, ts=at, blocks=bad_blocks) == (
            "invalid_blocks"
        )
        client.chat_stopStream(channel=CHANNEL, ts=at, markdown_text="!")
        assert error(client.chat_appendStream, channel=CHANNEL, ts=at, markdown_text="x") == (
            "message_not_in_streaming_state"
        )
        (reply,) = [m for m in fake.messages(CHANNEL) if m["ts"] == at]
        assert reply["text"] == "**Hello**!" and reply["thread_ts"] == ts(1)
        # Slack ends a stream five minutes after it started, whatever was appended.
        late = start(channel=CHANNEL, thread_ts=ts(1), markdown_text="a", **recipients)["ts"]
        clock[0] += 301
        assert error(client.chat_stopStream, channel=CHANNEL, ts=late) == (
            "message_not_in_streaming_state"
        )
        # A DM needs no recipient.
        assert client.chat_startStream(channel=DM, thread_ts=ts(1))["ok"]


def test_a_broken_stream_someone_deleted_is_posted_again_once(tmp_path: Path) -> None:
    with new_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.appendStream", 1, status=500)
        bot.slack.fail_next("chat.update", 1, status=200, error="message_not_found")
        ask(bot, ts(10))
        assert methods(bot)[-1] == "chat.postMessage"
        finished = [m for m in bot_messages(bot) if m.get("metadata")]
        (answer,) = finished  # the whole answer once; the deleted stream is not ours to redo
        assert answer["text"] == ANSWER
        assert bot.runtime.turns.outbox() == [] and bot.runtime.turns.pending() == []


def test_a_long_part_grows_in_a_bounded_number_of_appends(tmp_path: Path) -> None:
    long = " ".join(f"Sentence {n} about the deploy and its rollback." for n in range(220))
    assert 10_000 < len(long) < 12_000  # one part
    with OfflineBot(
        copy.deepcopy(STATE), responder=Answers(long), start_time=START, data_dir=tmp_path
    ) as bot:
        ask(bot, ts(10))
        appends = methods(bot).count("chat.appendStream")
        assert 5 <= appends <= 11  # Slack's appendStream budget is 100+ a minute per workspace
        (answer,) = bot_messages(bot)
        assert answer["text"] == long
