"""Scoping is structural: tools bound to C1 never read, reveal or distinguish C2's content."""

from __future__ import annotations

import json
from typing import Any

from chanctx.cache import ChannelHistory
from chanctx.context import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.tools.test_tools_data import (
    C1,
    GRAFANA,
    INCIDENT,
    SECRET_FILE,
    SECRET_THREAD,
    build_history,
    c1_messages,
    c2_messages,
    ok,
    tools_for,
    ts,
)

C2_IDS = [m.ts for m in c2_messages()]
C1_IDS = {m.ts for m in c1_messages()}
ONLY_C2_IDS = [i for i in C2_IDS if i not in C1_IDS]
SHARED_TS = ts(3_900, 100)  # a C1 reply and a C2 message posted in the same microsecond
# Phrases only C2's messages contain; the generated inputs below never spell them.
C2_PHRASES = ("do not forward", "salary adjustments", "bands pool review", "payroll.csv", "U9ZED")


def _same_template(a: str, a_id: str, b: str, b_id: str) -> bool:
    return a.replace(a_id, "<id>") == b.replace(b_id, "<id>")


def test_other_channel_ids_get_the_same_answer_as_nonexistent_ones() -> None:
    tools = tools_for()
    nowhere = ts(77_777, 7)
    assert SHARED_TS in C1_IDS and ONLY_C2_IDS
    for c2_id in ONLY_C2_IDS:
        for arguments in (
            lambda i: {"thread_id": i},
            lambda i: {"message_ids": [i]},
        ):
            elsewhere = tools.call("channel_messages", arguments(c2_id))
            missing = tools.call("channel_messages", arguments(nowhere))
            assert elsewhere.is_error and missing.is_error
            assert _same_template(elsewhere.content, c2_id, missing.content, nowhere)
            assert elsewhere.content.endswith("not found in this channel")
    file_elsewhere = tools.call("channel_messages", {"media_artifact_id": SECRET_FILE})
    file_missing = tools.call("channel_messages", {"media_artifact_id": "F0MISSING1"})
    assert file_elsewhere.content == f"media artifact {SECRET_FILE} not found in this channel"
    assert _same_template(file_elsewhere.content, SECRET_FILE, file_missing.content, "F0MISSING1")


def test_a_ts_both_channels_use_answers_with_this_channels_message() -> None:
    answer = ok(tools_for().call("channel_messages", {"message_ids": [SHARED_TS]}))
    assert answer["messages"][0]["text"].startswith("Found it: the DB connection pool")


def test_searching_for_another_channels_words_finds_nothing_of_it() -> None:
    answer = ok(
        tools_for().call(
            "channel_context", {"intent": "payroll salary zebrafish", "authors": ["Zed"]}
        )
    )
    assert answer["results"] == []
    assert answer["searched"] == len(c1_messages())


class SpyHistory(ChannelHistory):
    """Records the channel of every read, to prove the tools only ever read theirs."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, channel: str, ts: str) -> Message | None:
        self.read.add(channel)
        return super().get(channel, ts)

    def timeline(self, channel: str, *, limit: int | None = None) -> list[Message]:
        self.read.add(channel)
        return super().timeline(channel, limit=limit)

    def replies(self, channel: str, thread_ts: str) -> list[Message]:
        self.read.add(channel)
        return super().replies(channel, thread_ts)


def _spy() -> SpyHistory:
    spy = SpyHistory()
    for message in c1_messages() + c2_messages():
        spy.record(message)
    return spy


def test_no_call_ever_reads_another_channel() -> None:
    spy = _spy()
    tools = tools_for(spy)
    for name, arguments in [
        ("channel_context", {"intent": "payroll zebrafish checkout", "authors": ["Zed"]}),
        ("channel_messages", {"thread_id": SECRET_THREAD}),
        ("channel_messages", {"message_ids": C2_IDS}),
        ("channel_messages", {"media_artifact_id": SECRET_FILE}),
        ("channel_messages", {"thread_id": INCIDENT}),
    ]:
        tools.call(name, arguments)
    assert spy.read == {C1}


# -- any input at all -------------------------------------------------------------------------

# Words of C2's messages (and C1's), but never a whole C2 phrase: inputs may be echoed back.
_WORDS = st.sampled_from(
    [
        *("payroll", "zebrafish", "salary", "confidential", "friday", "team", "checkout"),
        *("pool", "deploy", "502", "why", "Zed", "sheet", "rollback", "flag", "bands", "forward"),
    ]
)
_IDS = st.one_of(
    st.sampled_from(C2_IDS + sorted(C1_IDS)),
    st.integers(0, 20_000).map(lambda s: ts(s - 5_000, 100)),
    st.from_regex(r"\d{1,12}(\.\d{1,9})?", fullmatch=True),
)
_FILES = st.sampled_from([SECRET_FILE, GRAFANA, "F0NOPE", "payroll"])
_context_inputs = st.fixed_dictionaries(
    {"intent": st.lists(_WORDS, min_size=1, max_size=6).map(" ".join)},
    optional={
        "authors": st.lists(st.sampled_from(["Zed", "U9ZED", "Dev", "@zed"]), max_size=3),
        "since": st.sampled_from(["2026-06-09", SECRET_THREAD, "1970-01-01T00:00:00Z"]),
        "max_results": st.integers(1, 50),
    },
)
_message_inputs = st.one_of(
    st.fixed_dictionaries({"thread_id": _IDS}, optional={"max_replies": st.integers(1, 500)}),
    st.fixed_dictionaries({"message_ids": st.lists(_IDS, min_size=1, max_size=6)}),
    st.fixed_dictionaries({"media_artifact_id": _FILES}),
)
calls = st.one_of(
    st.tuples(st.just("channel_context"), _context_inputs),
    st.tuples(st.just("channel_messages"), _message_inputs),
)
_SHARED = build_history()


@given(calls)
@settings(max_examples=150, deadline=None)
def test_no_output_ever_contains_another_channels_content(call: tuple[str, Any]) -> None:
    name, arguments = call
    result = tools_for(_SHARED).call(name, arguments)
    lowered = result.content.lower()
    for phrase in C2_PHRASES:
        assert phrase.lower() not in lowered, (phrase, result.content)
    if not result.is_error:
        authors = {a["user_id"] for a in _authors(json.loads(result.content))}
        assert authors <= {m.user_id for m in c1_messages()}


def _authors(node: object) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = [node["author"]] if isinstance(node.get("author"), dict) else []
        return found + [a for value in node.values() for a in _authors(value)]
    if isinstance(node, list):
        return [a for value in node for a in _authors(value)]
    return []


@given(st.sampled_from(ONLY_C2_IDS), st.integers(0, 30_000))
@settings(max_examples=50, deadline=None)
def test_any_other_channel_id_reads_like_a_missing_one(c2_id: str, offset: int) -> None:
    nowhere = ts(offset + 50_000, 3)
    tools = tools_for(_SHARED)
    for key in ("thread_id", "message_ids"):
        value = (lambda i: [i]) if key == "message_ids" else (lambda i: i)
        elsewhere = tools.call("channel_messages", {key: value(c2_id)})
        missing = tools.call("channel_messages", {key: value(nowhere)})
        assert elsewhere.is_error == missing.is_error is True
        assert _same_template(elsewhere.content, c2_id, missing.content, nowhere)
