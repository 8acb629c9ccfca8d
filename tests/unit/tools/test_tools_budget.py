"""Every answer fits the output budget, counted on the JSON sent; cuts are said, best kept."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chanctx.cache import ChannelHistory
from chanctx.context import Message, default_counter
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.tools.test_tools_data import (
    C1,
    GRAFANA,
    INCIDENT,
    LONG_THREAD,
    add_long_thread,
    build_history,
    long_text,
    ok,
    tools_for,
    ts,
)

COUNTER = default_counter()


def _big_history() -> tuple[ChannelHistory, list[Message]]:
    history = build_history()
    replies = add_long_thread(history, 150)
    # A root far longer than any budget, and one long message with no sentence boundary at all.
    history.record(
        Message(channel=C1, ts=ts(20_000), user_id="U4LEE", text="Essay. " + long_text(2, 400))
    )
    history.record(
        Message(channel=C1, ts=ts(20_100), user_id="U4LEE", text="wall " + "word " * 3_000)
    )
    return history, replies


HISTORY, REPLIES = _big_history()
IDS = [m.ts for m in REPLIES] + [ts(20_000), ts(20_100), INCIDENT]

calls = st.one_of(
    st.tuples(
        st.just("channel_context"),
        st.fixed_dictionaries(
            {
                "intent": st.sampled_from(
                    ["canary checkout-api", "why did checkout fail", "queue", "essay", "wall"]
                )
            },
            optional={"max_results": st.integers(1, 50)},
        ),
    ),
    st.tuples(
        st.just("channel_messages"),
        st.one_of(
            st.fixed_dictionaries(
                {"thread_id": st.sampled_from([LONG_THREAD, INCIDENT, ts(20_000)])},
                optional={"max_replies": st.integers(1, 500)},
            ),
            st.fixed_dictionaries({"message_ids": st.lists(st.sampled_from(IDS), min_size=1)}),
            st.just({"media_artifact_id": GRAFANA}),
        ),
    ),
)


@pytest.mark.slow
@given(calls, st.integers(300, 6_000))
@settings(max_examples=80, deadline=None)
def test_every_answer_fits_any_budget_of_300_or_more(call: tuple[str, Any], budget: int) -> None:
    name, arguments = call
    result = tools_for(HISTORY, output_budget_tokens=budget).call(name, arguments)
    assert not result.is_error, result.content
    assert COUNTER.count(result.content) <= budget
    answer = ok(result)
    if answer.get("truncated"):
        assert answer["note"]
    roomy = ok(tools_for(HISTORY, output_budget_tokens=10**7).call(name, arguments))
    if answer != roomy:  # anything left out or cut is flagged
        assert answer["truncated"] is True


def _context(budget: int, **arguments: Any) -> dict[str, Any]:
    tools = tools_for(HISTORY, output_budget_tokens=budget)
    return ok(tools.call("channel_context", {"intent": "canary checkout-api", **arguments}))


def test_a_cut_search_keeps_the_best_results_and_says_how_to_get_more() -> None:
    full = _context(10**7, max_results=20)
    cut = _context(500, max_results=20)
    assert "truncated" not in full
    kept = [r["message_id"] for r in cut["results"]]
    assert 0 < len(kept) < len(full["results"])
    assert kept == [r["message_id"] for r in full["results"]][: len(kept)]  # a best-first prefix
    assert cut["truncated"] is True
    assert "left out to fit the output budget" in cut["note"]
    assert "since" in cut["note"] and "channel_messages" in cut["note"]
    assert (cut["searched"], cut["range"]) == (full["searched"], full["range"])


def test_a_text_too_long_for_the_budget_is_cut_at_a_sentence() -> None:
    tools = tools_for(HISTORY, output_budget_tokens=600)
    answer = ok(tools.call("channel_context", {"intent": "essay", "max_results": 1}))
    (result,) = answer["results"]
    assert result["text"].startswith("Essay. ") and result["text"].endswith(" ...")
    assert result["text"][:-4].rstrip().endswith((".", "!", "?"))
    assert "was cut" in answer["note"]


def test_a_text_without_sentences_is_cut_at_a_word() -> None:
    tools = tools_for(HISTORY, output_budget_tokens=600)
    answer = ok(tools.call("channel_context", {"intent": "wall", "max_results": 1}))
    (result,) = answer["results"]
    assert result["text"].startswith("wall word word") and result["text"].endswith("word ...")
    assert answer["truncated"] is True


def test_a_root_longer_than_the_budget_is_cut_and_flagged() -> None:
    tools = tools_for(HISTORY, output_budget_tokens=400)
    answer = ok(tools.call("channel_messages", {"thread_id": ts(20_000)}))
    assert COUNTER.count(json.dumps(answer, separators=(",", ":"), ensure_ascii=False)) <= 400
    assert answer["thread"]["root"]["text"].endswith(" ...")
    assert answer["truncated"] is True and "root's text was cut" in answer["note"]


def test_messages_left_out_are_named_by_where_they_start() -> None:
    asked = [m.ts for m in REPLIES[:40]]
    tools = tools_for(HISTORY, output_budget_tokens=800)
    answer = ok(tools.call("channel_messages", {"message_ids": asked}))
    kept = [m["message_id"] for m in answer["messages"]]
    assert kept == asked[: len(kept)] and len(kept) < len(asked)
    assert f"from {asked[len(kept)]} on" in answer["note"]
