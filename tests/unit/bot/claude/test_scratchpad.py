"""Seed 004's scratchpad: a bulky tool output is set aside, the session gets its first part and
a handle, and Claude reads the rest with ``scratchpad_read``; through a real session too."""

from __future__ import annotations

from typing import Any

import pytest
from chanctx.bot.claude.scratchpad import Scratchpad
from chanctx.bot.replay.fixture import load_fixture
from chanctx.bot.replay.offline import OfflineBot
from chanctx.context import default_counter
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.paths import ROOT
from tests.support.strategies import sentences

COUNT = default_counter().count
DEMO = ROOT / "fixtures" / "demo"


@settings(max_examples=150, deadline=None)
@given(text=st.lists(sentences(), max_size=150).map(" ".join), threshold=st.integers(50, 800))
def test_pages_hold_the_whole_output_each_within_the_threshold(text: str, threshold: int) -> None:
    pad = Scratchpad(COUNT, threshold=threshold)
    shown = pad.set_aside("channel_messages", text)
    if COUNT(text) <= threshold:
        assert shown == text
        return
    handle = shown[shown.index('handle="') + 8 :].split('"')[0]
    pages = int(shown.split(" pages;")[0].rsplit(" ", 1)[-1])
    read = [text[: len(shown.split("\n[channel_messages result set aside")[0])]]
    for page in range(2, pages + 1):
        result = pad.read({"handle": handle, "page": page})
        assert not result.is_error
        body = result.content.split("\n", 1)[1]
        assert COUNT(body) <= threshold
        read.append(body)
    assert "".join(read) == text  # nothing lost, nothing repeated


def test_bad_reads_name_what_is_wrong() -> None:
    pad = Scratchpad(COUNT, threshold=50)
    pad.set_aside("channel_messages", "word " * 400)
    for given_input, problem in (
        ({"handle": "sp-1", "page": 99}, "page: must be 1 to"),
        ({"handle": "../etc", "page": 2}, "is not a handle like sp-1"),
        ({"handle": "sp-7", "page": 2}, "is not in the scratchpad"),
        ("sp-1", "takes {handle, page}"),
    ):
        result = pad.read(given_input)
        assert result.is_error and problem in result.content


def _response(number: int, content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    return {"id": f"msg_pad_{number}", "type": "message", "role": "assistant",
            "model": "claude-sonnet-5", "content": content, "stop_reason": stop}  # fmt: skip


@pytest.mark.slow
def test_a_fetched_thread_is_set_aside_and_read_on_demand() -> None:
    fixture = load_fixture(DEMO)
    root = next(
        e["event"]["ts"] for e in fixture.envelopes
        if e["event"].get("text", "").startswith("Seeing elevated 502s")
    )  # fmt: skip
    cassette = [
        _response(1, [{"type": "tool_use", "id": "toolu_pad_1", "name": "channel_messages",
                       "input": {"thread_id": root}}], "tool_use"),
        _response(2, [{"type": "tool_use", "id": "toolu_pad_2", "name": "scratchpad_read",
                       "input": {"handle": "sp-1", "page": 2}}], "tool_use"),
        _response(3, [{"type": "text", "text": "The rollback fixed it."}], "end_turn"),
    ]  # fmt: skip
    start = float(fixture.envelopes[0].get("event_time") or 0)
    with OfflineBot(fixture.slack_api, claude=True, cassette=cassette, start_time=start) as bot:
        for envelope in fixture.envelopes:
            bot.dispatch(envelope)
        assert bot.anthropic is not None
        sent = [r.body for r in bot.anthropic.requests if r.path.startswith("/v1/messages")]
        first = bot.runtime.runner.results[0]
    assert first.error is None and first.reply == "The rollback fixed it."
    assert "scratchpad_read" in {tool["name"] for tool in sent[0]["tools"]}

    def last_result(body: dict[str, Any]) -> str:
        block = body["messages"][-1]["content"][-1]
        assert block["type"] == "tool_result"
        return str(block["content"])

    aside = last_result(sent[1])
    assert 'scratchpad_read(handle="sp-1", page=2...' in aside
    assert COUNT(aside) <= 1_500 + 80  # the first page and the note, not the whole thread
    page_two = last_result(sent[2])
    assert page_two.startswith("[sp-1 page 2 of ")
    # The turn records what Claude saw: the first page with its handle, then page two.
    assert [c.name for c in first.tool_calls] == ["channel_messages", "scratchpad_read"]
    assert first.tool_calls[0].output == aside and first.tool_calls[1].output == page_two
