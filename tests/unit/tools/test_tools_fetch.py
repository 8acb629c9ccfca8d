"""channel_messages: threads (max_replies, true totals), messages by id, media, degraded lookups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chanctx.context import Message, iso_from_ts
from chanctx.tools import ChannelTools, HistoryView, ThreadLookup
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.tools.test_tools_data import (
    C1,
    GRAFANA,
    INCIDENT,
    LONG_THREAD,
    NAMES,
    add_long_thread,
    build_history,
    c1_messages,
    ok,
    tools_for,
    ts,
)

INCIDENT_REPLIES = [m for m in c1_messages() if m.thread_ts == INCIDENT and m.ts != INCIDENT]


def fetch(args: dict[str, Any], **options: Any) -> dict[str, Any]:
    return ok(tools_for(**options).call("channel_messages", args))


def test_a_whole_thread_is_root_plus_every_reply_oldest_first() -> None:
    answer = fetch({"thread_id": INCIDENT})
    thread = answer["thread"]
    assert thread["thread_id"] == INCIDENT
    assert thread["root"]["text"].startswith("Checkout is failing")
    assert [r["message_id"] for r in thread["replies"]] == [m.ts for m in INCIDENT_REPLIES]
    assert thread["truncation"] == {
        "total_replies": 5,
        "included_replies": 5,
        "strategy": "most_recent",
        "omitted_range_ts": None,
    }
    assert "truncated" not in answer and "note" not in answer


@given(st.integers(1, 6))
@settings(max_examples=10, deadline=None)
def test_max_replies_keeps_the_newest_and_states_the_true_total(limit: int) -> None:
    answer = fetch({"thread_id": INCIDENT, "max_replies": limit})
    thread = answer["thread"]
    kept = INCIDENT_REPLIES[-limit:]
    assert [r["message_id"] for r in thread["replies"]] == [m.ts for m in kept]
    omitted = len(INCIDENT_REPLIES) - len(kept)
    assert thread["truncation"]["total_replies"] == 5
    assert thread["truncation"]["included_replies"] == len(kept)
    if omitted:
        assert thread["truncation"]["omitted_range_ts"] == [
            iso_from_ts(INCIDENT_REPLIES[0].ts),
            iso_from_ts(INCIDENT_REPLIES[omitted - 1].ts),
        ]
        assert answer["truncated"] is True
        assert f"{omitted} older replies are not included (max_replies)" in answer["note"]
    else:
        assert thread["truncation"]["omitted_range_ts"] is None
        assert "truncated" not in answer


def test_a_long_thread_cut_by_the_output_budget_says_so() -> None:
    history = build_history()
    replies = add_long_thread(history, 120)
    answer = fetch({"thread_id": LONG_THREAD, "max_replies": 500}, history=history)
    truncation = answer["thread"]["truncation"]
    assert truncation["total_replies"] == 120
    assert 0 < truncation["included_replies"] < 120
    included = answer["thread"]["replies"]
    assert included[-1]["message_id"] == replies[-1].ts  # the newest are the ones kept
    assert answer["truncated"] is True
    assert "to fit the output budget" in answer["note"]
    assert "channel_context" in answer["note"]


def test_asking_for_a_reply_as_a_thread_points_at_its_root() -> None:
    result = tools_for().call("channel_messages", {"thread_id": INCIDENT_REPLIES[2].ts})
    assert result.is_error
    assert result.content == (
        f"message {INCIDENT_REPLIES[2].ts} is a reply, not a thread root: call "
        f"channel_messages with thread_id {INCIDENT}"
    )


def test_a_message_without_replies_is_a_thread_of_one() -> None:
    lunch = c1_messages()[0]
    thread = fetch({"thread_id": lunch.ts})["thread"]
    assert thread["root"]["text"].startswith("Lunch order")
    assert thread["replies"] == [] and thread["truncation"]["total_replies"] == 0


def test_a_deleted_root_leaves_its_thread_readable() -> None:
    history = build_history()
    history.delete(C1, INCIDENT)
    thread = fetch({"thread_id": INCIDENT}, history=history)["thread"]
    assert "Checkout is failing" not in thread["root"]["text"]
    assert "deleted" in thread["root"]["text"]
    assert len(thread["replies"]) == 5


def test_message_ids_come_back_in_the_order_asked() -> None:
    asked = [ts(5_000, 100), INCIDENT_REPLIES[2].ts, ts(0, 100), ts(5_000, 100)]
    messages = fetch({"message_ids": asked})["messages"]
    assert [m["message_id"] for m in messages] == asked[:3]  # a repeat is answered once
    assert messages[0]["text"].startswith("Who is on call")
    assert messages[1]["author"] == {"user_id": "U2DEV", "display_name": "Dev", "is_bot": False}
    assert messages[2]["author"]["is_bot"] is True


def test_a_file_only_message_says_what_it_shares() -> None:
    message = fetch({"message_ids": [ts(4_300, 100)]})["messages"][0]
    assert message["text"] == "[shared checkout-api 502 rate]"
    assert message["media"] == [
        {
            "artifact_id": GRAFANA,
            "media_type": "image/png",
            "filename": "grafana-502s.png",
            "byte_length": 48_213,
        }
    ]


def test_unknown_message_ids_are_named_in_the_error() -> None:
    missing = ts(99_999, 1)
    result = tools_for().call("channel_messages", {"message_ids": [INCIDENT, missing]})
    assert result.is_error
    assert result.content == f"message {missing} not found in this channel"
    two = tools_for().call("channel_messages", {"message_ids": [missing, ts(99_998, 1)]})
    assert two.content == f"messages {missing}, {ts(99_998, 1)} not found in this channel"


def test_a_deleted_message_is_not_found() -> None:
    history = build_history()
    gone = INCIDENT_REPLIES[2].ts
    history.delete(C1, gone)
    result = tools_for(history).call("channel_messages", {"message_ids": [gone]})
    assert (result.is_error, result.content) == (True, f"message {gone} not found in this channel")


def test_media_lookup_describes_the_file_without_bytes() -> None:
    answer = fetch({"media_artifact_id": GRAFANA})
    assert answer["media"] == {
        "artifact_id": GRAFANA,
        "media_type": "image/png",
        "filename": "grafana-502s.png",
        "byte_length": 48_213,
        "source_message_id": ts(4_300, 100),
    }
    assert "follows this result as a content block" in answer["note"]
    result = tools_for().call("channel_messages", {"media_artifact_id": "F0NOPE"})
    assert (result.is_error, result.content) == (
        True,
        "media artifact F0NOPE not found in this channel",
    )


class NotedView:
    """A view whose thread lookups are degraded (as bot/ serves them when rate-limited)."""

    def __init__(self, inner: HistoryView, note: str | None, fail: bool = False) -> None:
        self.inner, self.note, self.fail = inner, note, fail

    @property
    def channel(self) -> str:
        return self.inner.channel

    def messages(self) -> Sequence[Message]:
        return self.inner.messages()

    def get(self, ts: str) -> Message | None:
        return self.inner.get(ts)

    def thread(self, thread_ts: str) -> ThreadLookup:
        if self.fail:
            raise TimeoutError("slack.example: read timed out")
        found = self.inner.thread(thread_ts)
        return ThreadLookup(found.root, found.replies, self.note)


def test_a_lookup_note_is_passed_through() -> None:
    note = "served from cache: Slack rate limit"
    view = NotedView(HistoryView(build_history(), C1), note)
    answer = ok(ChannelTools(view, names=NAMES).call("channel_messages", {"thread_id": INCIDENT}))
    assert answer["note"] == note
    cut = ok(
        ChannelTools(view, names=NAMES).call(
            "channel_messages", {"thread_id": INCIDENT, "max_replies": 1}
        )
    )
    assert cut["note"].endswith(note) and "max_replies" in cut["note"]


def test_a_failing_lookup_is_a_tool_error_not_an_exception() -> None:
    view = NotedView(HistoryView(build_history(), C1), None, fail=True)
    result = ChannelTools(view, names=NAMES).call("channel_messages", {"thread_id": INCIDENT})
    assert result.is_error
    assert result.content.startswith(f"thread {INCIDENT} could not be read right now")
    assert "slack.example" not in result.content  # the exception's text is not passed on


def test_tool_results_become_tool_result_blocks() -> None:
    good = tools_for().call("channel_messages", {"thread_id": INCIDENT})
    assert good.as_block("toolu_1") == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": good.content,
        "is_error": False,
    }
    bad = tools_for().call("channel_messages", {})
    assert bad.as_block("toolu_2")["is_error"] is True
