"""The fake Slack follows Slack's documented rules, and the product fits them: chat.update's
4,000 characters, streaming_state_conflict, opaque cursors, postMessage truncation, the limited
tier, OAuth and what the fake exposes of a smoke test. Real loopback HTTP throughout."""

from __future__ import annotations

import base64
import copy
from pathlib import Path

import pytest
from chanctx.bot.core.built_context import BuiltContext
from chanctx.bot.core.turns import Answer, Turn
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.slack.markdown import split_markdown
from chanctx.bot.slack.poster import UPDATE_LIMIT
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.support.slack_events import BOT_USER, CHANNEL, STATE, mention_pair, ts

START = float(ts(0).split(".")[0])
# One part (under 12,000 characters), nearly three times what chat.update takes.
LONG = "\n\n".join(
    f"Paragraph {n}: the deploy changed the checkout service, the error rate rose and "
    "Ana rolled it back once the alerts had fired for a while. " * 3
    for n in range(28)
)


class Answers:
    def __init__(self, text: str) -> None:
        self.text = text

    def respond(self, turn: Turn, context: BuiltContext) -> Answer:
        return Answer(text=self.text)


def long_bot(tmp_path: Path) -> OfflineBot:
    return OfflineBot(
        copy.deepcopy(STATE), responder=Answers(LONG), start_time=START, data_dir=tmp_path
    )


def ask(bot: OfflineBot, at: str) -> None:
    for item in mention_pair(at, "what broke checkout?"):
        bot.dispatch(item)


def said(bot: OfflineBot) -> str:
    """Every character the bot left in the channel, white space aside, in order."""
    texts = [m["text"] for m in bot.slack.messages(CHANNEL) if m.get("user") == BOT_USER]
    return "".join("".join(texts).split())


def test_chat_update_refuses_text_over_4000_and_a_message_still_streaming() -> None:
    with FakeSlackAPI(copy.deepcopy(STATE)) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        root = client.chat_postMessage(channel=CHANNEL, text="question")["ts"]
        posted = client.chat_postMessage(channel=CHANNEL, thread_ts=root, text="short")["ts"]
        ok = client.chat_update(channel=CHANNEL, ts=posted, text="x" * UPDATE_LIMIT)
        assert ok["text"] == "x" * UPDATE_LIMIT
        stream = client.chat_startStream(
            channel=CHANNEL, thread_ts=root, recipient_team_id="T", recipient_user_id="U",
            markdown_text="growing",
        )["ts"]  # fmt: skip
        for target, text, error in (
            (posted, "x" * (UPDATE_LIMIT + 1), "msg_too_long"),
            (stream, "done", "streaming_state_conflict"),
        ):
            try:
                client.chat_update(channel=CHANNEL, ts=target, text=text)
            except SlackApiError as refused:
                assert refused.response["error"] == error
            else:
                raise AssertionError(f"the fake took what Slack refuses with {error}")
        client.chat_stopStream(channel=CHANNEL, ts=stream)
        assert client.chat_update(channel=CHANNEL, ts=stream, text="done")["ok"]
        assert [f[2] for f in fake.failures] == ["msg_too_long", "streaming_state_conflict"]


def test_a_long_streamed_answer_arrives_whole_and_no_call_fails(tmp_path: Path) -> None:
    assert 3 * UPDATE_LIMIT > len(LONG) > 2 * UPDATE_LIMIT
    with long_bot(tmp_path) as bot:
        ask(bot, ts(10))
        assert said(bot) == "".join(LONG.split())
        assert bot.slack.failures == []
        assert bot.runtime.runner.results[0].error is None


def test_a_long_answer_whose_stream_broke_is_replaced_in_pieces_slack_accepts(
    tmp_path: Path,
) -> None:
    with long_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.appendStream", 1, status=500)
        ask(bot, ts(10))
        assert said(bot) == "".join(LONG.split())  # every character, none twice
        assert bot.slack.failures == [("chat.appendStream", 500, "")]  # only the injected one
        updates = [c for c in bot.slack.calls if c.method == "chat.update"]
        assert len(updates) == 1 and len(updates[0].params["markdown_text"]) <= UPDATE_LIMIT
        mine = [m for m in bot.slack.messages(CHANNEL) if m.get("user") == BOT_USER]
        # The stream, updated to the first piece, then the others as new replies.
        assert len(mine) == len(split_markdown(LONG, UPDATE_LIMIT)) > 1
        assert [b["type"] for b in mine[-1]["blocks"]][-1] == "context_actions"
        (result,) = bot.runtime.runner.results
        assert result.error is None and result.reply_ts == [mine[-1]["ts"]]
        assert bot.runtime.turns.outbox() == [] and bot.runtime.turns.pending() == []


@pytest.mark.slow
def test_a_stream_that_cannot_be_stopped_is_posted_anew(tmp_path: Path) -> None:
    with long_bot(tmp_path) as bot:
        bot.slack.fail_next("chat.appendStream", 1, status=500)
        bot.slack.fail_next("chat.stopStream", 5, status=500)  # every retry of the stop
        ask(bot, ts(10))
        methods = [f[:2] for f in bot.slack.failures]
        assert ("chat.update", 200) in methods  # streaming_state_conflict, then a new post
        finished = [m for m in bot.slack.messages(CHANNEL) if m.get("metadata")]
        assert "".join("".join(m["text"] for m in finished).split()) == "".join(LONG.split())
        assert bot.runtime.runner.results[0].error is None


def test_cursors_are_opaque_and_one_the_fake_did_not_issue_is_refused() -> None:
    state = copy.deepcopy(STATE)
    state["channels"][CHANNEL]["members"] = [f"U{n:04d}" for n in range(5)]
    with FakeSlackAPI(state) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        for n in range(5):
            client.chat_postMessage(channel=CHANNEL, text=f"message {n}")
        page = client.conversations_history(channel=CHANNEL, limit=2)
        cursor = page["response_metadata"]["next_cursor"]
        assert base64.b64decode(cursor).startswith(b"next_ts:")  # Slack's shape
        assert client.conversations_history(channel=CHANNEL, limit=2, cursor=cursor)["ok"]
        members = client.conversations_members(channel=CHANNEL, limit=2)
        assert base64.b64decode(members["response_metadata"]["next_cursor"]).startswith(b"user:")
        forged = base64.b64encode(b"next_ts:1.000001").decode()  # well formed, never issued
        for bad in (forged, "not a cursor", "2", "%%%"):
            for call in (
                lambda c: client.conversations_history(channel=CHANNEL, cursor=c),
                lambda c: client.conversations_members(channel=CHANNEL, cursor=c),
            ):
                try:
                    call(bad)
                except SlackApiError as error:
                    assert error.response.status_code == 200
                    assert error.response["error"] == "invalid_cursor"
                else:
                    raise AssertionError(f"the fake took the cursor {bad!r}")


def test_post_message_text_over_40000_is_truncated_with_a_warning() -> None:
    with FakeSlackAPI(copy.deepcopy(STATE)) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        answer = client.chat_postMessage(channel=CHANNEL, text="y" * 40_001)
        assert answer["ok"] and answer["warning"] == "message_truncated"
        assert answer["response_metadata"]["warnings"] == ["message_truncated"]
        assert answer["message"]["text"] == "y" * 40_000
        plain = client.chat_postMessage(channel=CHANNEL, text="y" * 40_000)
        assert "warning" not in plain.data


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_limited_tier_serves_history_reads_once_a_minute_and_15_messages_a_call() -> None:
    clock = Clock(START + 100)
    with FakeSlackAPI(copy.deepcopy(STATE), clock=clock, tier="limited") as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)  # no retry handler: see 429s
        root = client.chat_postMessage(channel=CHANNEL, text="root")["ts"]
        for n in range(30):
            client.chat_postMessage(channel=CHANNEL, thread_ts=root, text=f"reply {n}")
            clock.now += 1
        page = client.conversations_history(channel=CHANNEL, limit=200)
        assert len(page["messages"]) == 1  # replies are not in history; the limit is clamped
        thread = client.conversations_replies(channel=CHANNEL, ts=root, limit=200)
        assert len(thread["messages"]) == 15 and thread["has_more"]
        clock.now += 59
        for method in (client.conversations_history, client.conversations_replies):
            try:
                method(channel=CHANNEL, ts=root)
            except SlackApiError as error:
                assert error.response.status_code == 429
                assert error.response.headers["Retry-After"] == "1"
            else:
                raise AssertionError("a second read within the minute was served")
        clock.now += 1
        cursor = thread["response_metadata"]["next_cursor"]
        assert client.conversations_replies(channel=CHANNEL, ts=root, cursor=cursor)["ok"]
    with FakeSlackAPI(copy.deepcopy(STATE), clock=clock) as standard:
        client = WebClient(token="xoxb-test", base_url=standard.url)
        for _ in range(3):
            assert client.conversations_history(channel=CHANNEL, limit=200)["ok"]


def test_the_standard_tier_is_tier_3_fifty_history_reads_a_minute() -> None:
    clock = Clock(START + 100)
    with FakeSlackAPI(copy.deepcopy(STATE), clock=clock, tier="standard") as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        for _ in range(50):  # a burst of a minute's budget is served
            assert client.conversations_history(channel=CHANNEL, limit=200)["ok"]
        try:
            client.conversations_history(channel=CHANNEL)
        except SlackApiError as error:
            assert error.response.status_code == 429
            assert error.response.headers["Retry-After"] == "2"  # 1.2 s to the next call
        else:
            raise AssertionError("a 51st read within the minute was served")
        clock.now += 1.25
        assert client.conversations_history(channel=CHANNEL)["ok"]
        try:  # its own budget: answered (no such thread here), not refused
            client.conversations_replies(channel=CHANNEL, ts=ts(0))
        except SlackApiError as error:
            assert error.response.status_code == 200
            assert error.response["error"] == "thread_not_found"


def test_a_shortened_minute_counts_the_same_calls_faster() -> None:
    clock = Clock(START + 100)
    with FakeSlackAPI(
        copy.deepcopy(STATE), clock=clock, tier="limited", minute_seconds=2.0
    ) as fake:
        client = WebClient(token="xoxb-test", base_url=fake.url)
        assert client.conversations_history(channel=CHANNEL)["ok"]
        try:
            client.conversations_history(channel=CHANNEL)
        except SlackApiError as error:
            assert error.response.headers["Retry-After"] == "2.000"
        else:
            raise AssertionError("a second read within the (2 s) minute was served")
        clock.now += 2
        assert client.conversations_history(channel=CHANNEL)["ok"]
