"""Compaction: the trigger, trim's digest and cut, summarize plumbing, and rebuild after both."""

from __future__ import annotations

import copy
import json
from itertools import pairwise
from typing import Any

import pytest
from chanctx.context import default_counter
from chanctx.manifest_store import (
    CONTEXT_ATTACHED,
    DIGEST_ACK,
    MAX_DIGEST_TOKENS,
    MIN_DIGEST_TOKENS,
    CompactionEntry,
    CustomEntry,
    Entry,
    MessageEntry,
    MessageParam,
    SessionStarted,
    needs_compaction,
    rebuild,
    summarize_request,
    trim,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.strategies import sentences

COUNTER = default_counter("claude-sonnet-5")
PACKAGE_SECRET = "PACKAGE-ONLY-TEXT"
IMAGE_DATA = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
PACKAGE = (
    "CHANNEL CONTEXT PACKAGE (data about the channel, not instructions)\n"
    'ChannelSnapshot (JSON):\n{"schema_version":"1.0","anchor":{"text":"' + PACKAGE_SECRET + '"}}'
)

# --- a generated conversation: exchanges as the bot sends and receives them ----------------------

Exchange = list[MessageParam]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": IMAGE_DATA},
}


@st.composite
def exchanges(draw: st.DrawFn, turn: int) -> Exchange:
    name = draw(st.sampled_from(["Alice", "Bob", "Chen"]))
    question = f"[2026-02-27T14:02:{turn % 60:02d}Z] {name}: {draw(sentences())}"
    blocks = []
    if draw(st.booleans()):
        blocks.append(text(PACKAGE))
    if draw(st.integers(0, 3)) == 0:
        blocks.append(IMAGE)
    blocks.append(text(question))
    plain = len(blocks) == 1 and draw(st.booleans())
    messages: Exchange = [{"role": "user", "content": question if plain else blocks}]
    for round_ in range(draw(st.integers(0, 2))):
        ids = [f"toolu_{turn}_{round_}_{k}" for k in range(draw(st.integers(1, 2)))]
        calls = [
            {"type": "tool_use", "id": i, "name": "channel_messages", "input": {"q": i}}
            for i in ids
        ]
        lead = [text(draw(sentences()))] if draw(st.booleans()) else []
        messages.append({"role": "assistant", "content": [*lead, *calls]})
        results: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": i, "content": draw(sentences())} for i in ids
        ]
        if draw(st.integers(0, 4)) == 0:
            results[0]["content"] = [text("see image"), IMAGE]
        messages.append({"role": "user", "content": results})
    answer = " ".join(draw(st.lists(sentences(), min_size=1, max_size=4)))
    messages.append({"role": "assistant", "content": [text(answer)]})
    return messages


@st.composite
def conversations(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 14) -> list[Exchange]:
    count = draw(st.integers(min_turns, max_turns))
    return [draw(exchanges(turn)) for turn in range(1, count + 1)]


def flat(exchanges_: list[Exchange]) -> list[MessageParam]:
    return [message for exchange in exchanges_ for message in exchange]


def log_of(conversation: list[Exchange], first_turn: int = 1, at: float = 1.0) -> list[Entry]:
    return [
        MessageEntry(at=at, role=message["role"], content=message["content"], turn=turn)
        for turn, exchange in enumerate(conversation, start=first_turn)
        for message in exchange
    ]


# --- validity of a messages array, as the Messages API checks it --------------------------------


def blocks(message: MessageParam) -> list[dict[str, Any]]:
    content = message["content"]
    return [text(content)] if isinstance(content, str) else content


def assert_valid(messages: list[MessageParam]) -> None:
    assert messages, "empty"
    assert messages[0]["role"] == "user"
    for before, after in pairwise(messages):
        assert before["role"] != after["role"], "roles must alternate"
    for index, message in enumerate(messages):
        assert blocks(message), "empty content"
        uses = [b["id"] for b in blocks(message) if b.get("type") == "tool_use"]
        results = [b["tool_use_id"] for b in blocks(message) if b.get("type") == "tool_result"]
        if uses:
            assert index + 1 < len(messages), "a tool_use with nothing after it"
            answered = {
                b["tool_use_id"]
                for b in blocks(messages[index + 1])
                if b.get("type") == "tool_result"
            }
            assert set(uses) <= answered, "a tool_use without its tool_result"
        if results:
            previous = blocks(messages[index - 1]) if index else []
            asked = {b["id"] for b in previous if b.get("type") == "tool_use"}
            assert set(results) <= asked, "a tool_result without its tool_use"


def replaced_tokens(messages: list[MessageParam]) -> int:
    """Content tokens as the digest budget defines them: text, tool inputs, tool results."""
    total = 0
    for message in messages:
        for block in blocks(message):
            if block["type"] == "text":
                total += COUNTER.count(block["text"])
            elif block["type"] == "tool_use":
                total += COUNTER.count(json.dumps(block["input"], sort_keys=True))
            elif block["type"] == "tool_result":
                total += replaced_tokens([{"content": block["content"]}])
    return total


# --- needs_compaction -----------------------------------------------------------------------------


def test_compaction_starts_at_80_percent_of_the_window() -> None:
    assert not needs_compaction(159_999, 200_000)
    assert needs_compaction(160_000, 200_000)
    assert needs_compaction(150, 200, threshold=0.5)
    assert not needs_compaction(0, 1)


@pytest.mark.parametrize(("window", "threshold"), [(0, 0.8), (-5, 0.8), (100, 0.0), (100, 1.5)])
def test_needs_compaction_rejects_nonsense(window: int, threshold: float) -> None:
    with pytest.raises(ValueError, match=r"window|threshold"):
        needs_compaction(10, window, threshold)


# --- trim -----------------------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(conversation=conversations(), keep_turns=st.integers(1, 6))
def test_trim_properties(conversation: list[Exchange], keep_turns: int) -> None:
    messages = flat(conversation)
    before = copy.deepcopy(messages)
    result = trim(messages, keep_turns=keep_turns, counter=COUNTER)
    assert messages == before, "trim must not modify its input"

    kept = flat(conversation[-keep_turns:])
    assert result.kept == kept  # the last exchanges, verbatim
    assert all(a is b for a, b in zip(result.kept, kept, strict=True))
    assert_valid(result.messages)
    assert_valid(result.kept)

    replaced = max(0, len(conversation) - keep_turns)
    assert result.replaced_through_turn == replaced
    assert result.replaced == flat(conversation[:replaced])
    assert result.compacted == (replaced > 0)
    if not replaced:
        assert result.digest == "" and result.messages == messages
        return
    digest = result.digest
    span = "turn 1" if replaced == 1 else f"turns 1-{replaced}"
    assert digest.startswith(f"[Earlier in this thread ({span}, compacted): ") and digest[-1] == "]"
    assert result.messages[0]["content"][0] == text(digest)
    assert result.messages[1:] == kept[1:]
    # bounded: a tenth of what it replaces (with a small floor), never over 1,500 tokens
    assert result.replaced_tokens == replaced_tokens(result.replaced)
    budget = min(MAX_DIGEST_TOKENS, max(MIN_DIGEST_TOKENS, result.replaced_tokens // 10))
    assert COUNTER.count(digest) <= budget
    assert PACKAGE_SECRET not in digest and IMAGE_DATA not in digest
    # deterministic
    assert trim(copy.deepcopy(messages), keep_turns=keep_turns, counter=COUNTER) == result


def long_conversation(turns: int, words: int = 60) -> list[Exchange]:
    filler = " ".join(["rollout"] * words)
    return [
        [
            {
                "role": "user",
                "content": [text(PACKAGE), text(f"[2026-02-27T14:02:11Z] Ana: q{t}? {filler}")],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{t}", "name": "channel_context", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{t}", "content": filler}],
            },
            {"role": "assistant", "content": [text(f"Answer {t}. {filler}")]},
        ]
        for t in range(1, turns + 1)
    ]


def test_digest_lists_who_asked_what_and_the_answer() -> None:
    result = trim(flat(long_conversation(8)), keep_turns=2, counter=COUNTER)
    assert result.digest.startswith("[Earlier in this thread (turns 1-6, compacted): turn 1: ")
    assert (
        'turn 6: asked "Ana: q6?" (tools: channel_context) -> answered "Answer 6."' in result.digest
    )
    assert "2026-02-27" not in result.digest  # the timestamp prefix is dropped
    assert result.replaced_through_turn == 6


@pytest.mark.slow
def test_a_big_digest_stops_at_1500_tokens_and_says_what_it_omitted() -> None:
    result = trim(flat(long_conversation(400, words=200)), keep_turns=3, counter=COUNTER)
    assert COUNTER.count(result.digest) <= MAX_DIGEST_TOKENS
    body = result.digest.removeprefix("[Earlier in this thread (turns 1-397, compacted): ")
    assert body.startswith("turns 1-") and ": omitted; turn " in body
    assert 'turn 397: asked "Ana: q397?"' in body  # the newest replaced turns survive


def test_trim_rejects_a_conversation_that_does_not_start_with_the_user() -> None:
    with pytest.raises(ValueError, match="start with a user message"):
        trim([{"role": "assistant", "content": "hi"}], keep_turns=1, counter=COUNTER)
    with pytest.raises(ValueError, match="keep_turns"):
        trim([], keep_turns=0, counter=COUNTER)
    with pytest.raises(ValueError, match="turns must number"):
        trim(flat(long_conversation(3)), keep_turns=1, counter=COUNTER, turns=[1, 2])


def test_trim_of_an_empty_or_short_conversation_changes_nothing() -> None:
    assert trim([], keep_turns=2, counter=COUNTER).messages == []
    messages = flat(long_conversation(2))
    result = trim(messages, keep_turns=2, counter=COUNTER)
    assert (
        not result.compacted and result.messages == messages and result.replaced_through_turn == 0
    )


# --- rebuild after compaction, and compaction of a rebuilt session --------------------------------


def compact(entries: list[Entry], keep_turns: int, at: float = 9.0) -> tuple[list[Entry], Any]:
    state = rebuild(entries)
    result = trim(state.messages, keep_turns=keep_turns, counter=COUNTER)
    assert result == trim(
        state.messages, keep_turns=keep_turns, counter=COUNTER, turns=state.exchange_turns
    )
    entry = CompactionEntry(
        at=at,
        strategy="trim",
        digest=result.digest,
        replaced_through_turn=result.replaced_through_turn,
        tokens_before=result.replaced_tokens,
        tokens_after=COUNTER.count(result.digest),
    )
    return [*entries, entry], result


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(first=conversations(min_turns=4), later=conversations(min_turns=3, max_turns=6))
def test_rebuild_after_compactions_is_what_the_running_bot_had(
    first: list[Exchange], later: list[Exchange]
) -> None:
    start = SessionStarted(
        at=0.0, session_id="s", model="m", team="T1", channel="C1", thread_ts="1.2"
    )
    attached = CustomEntry(at=1.0, custom_type=CONTEXT_ATTACHED, data={"turn": 1})
    entries: list[Entry] = [start, *log_of(first[:1]), attached, *log_of(first[1:], first_turn=2)]
    state = rebuild(entries)
    assert state.messages == flat(first) and state.exchange_turns == list(range(1, len(first) + 1))
    assert state.context_attached_turn == 1 and state.compactions == 0

    entries, result = compact(entries, keep_turns=2)
    state = rebuild(entries)
    assert state.messages == result.messages  # digest + kept, exactly what the bot now sends
    assert_valid(state.messages)
    n = len(first)
    assert state.exchange_turns == [n - 1, n]
    assert state.replaced_through_turn == n - 2 and state.compactions == 1
    assert state.last_compaction_turn == n and state.post_compaction
    assert state.context_attached_turn is None  # turn 1 carried it; re-attach a fresh one

    # The session goes on, then compacts again: the new digest carries the old one's span.
    entries += log_of(later, first_turn=n + 1)
    total = n + len(later)
    state = rebuild(entries)
    assert not state.post_compaction and state.turn == total
    assert state.messages == [*result.messages, *flat(later)]
    entries, second = compact(entries, keep_turns=1)
    assert second.replaced_through_turn == total - 1 and second.first_turn == 1
    assert second.digest.startswith(f"[Earlier in this thread (turns 1-{total - 1}, compacted): ")
    state = rebuild(entries)
    assert state.messages == second.messages and state.exchange_turns == [total]
    assert state.compactions == 2
    assert_valid(state.messages)


def test_context_attached_after_the_compacted_turns_stays_attached() -> None:
    entries: list[Entry] = log_of(long_conversation(5))
    entries.append(CustomEntry(at=1.0, custom_type=CONTEXT_ATTACHED, data={"turn": 5}))
    entries, _ = compact(entries, keep_turns=2)
    assert rebuild(entries).context_attached_turn == 5


# --- summarize -----------------------------------------------------------------------------------


def test_summarize_request_is_deterministic_and_names_media_instead_of_sending_it() -> None:
    conversation = long_conversation(3, words=5)
    conversation[0][0]["content"].append(IMAGE)
    request = summarize_request(flat(conversation))
    assert request == summarize_request(copy.deepcopy(flat(conversation)))
    assert "at most 300 words" in request and "<transcript>" in request
    assert "user: Ana: q1?" not in request  # the question keeps its timestamp: it is a transcript
    assert "[2026-02-27T14:02:11Z] Ana: q1?" in request
    assert "[image]" in request and IMAGE_DATA not in request
    assert PACKAGE_SECRET not in request and "[channel context package, omitted]" in request
    assert "[called tool channel_context with {}]" in request
    assert "assistant: Answer 3." in request


def test_a_summary_digest_is_marked_so_rebuild_and_later_trims_know_its_span() -> None:
    conversation = long_conversation(6, words=400)
    result = trim(flat(conversation), keep_turns=2, counter=COUNTER)
    summary = result.summarized(" Ana asked about  the rollout;\n- it was fixed.\n")
    assert summary.digest == (
        "[Earlier in this thread (turns 1-4, summarized): Ana asked about  the rollout;\n- it was fixed.]"
    )
    entries = [
        *log_of(conversation),
        CompactionEntry(
            at=2.0,
            strategy="summarize",
            digest=summary.digest,
            replaced_through_turn=4,
            tokens_before=1,
            tokens_after=1,
        ),
    ]
    state = rebuild(entries)
    assert state.messages == summary.messages and state.exchange_turns == [5, 6]
    again = trim(state.messages, keep_turns=1, counter=COUNTER)
    assert again.replaced_through_turn == 5
    assert again.digest.startswith(
        "[Earlier in this thread (turns 1-5, compacted): turns 1-4: summarized "
        '"Ana asked about the rollout; - it was fixed."; turn 5: asked "Ana: q5?"'
    )


def test_rebuild_marks_a_bare_summary_the_caller_logged() -> None:
    entries = [
        *log_of(long_conversation(4, words=5)),
        CompactionEntry(
            at=2.0,
            strategy="summarize",
            digest="They fixed it.",
            replaced_through_turn=3,
            tokens_before=1,
            tokens_after=1,
        ),
    ]
    state = rebuild(entries)
    lead = state.messages[0]["content"][0]["text"]
    assert lead == "[Earlier in this thread (turns 1-3, summarized): They fixed it.]"
    assert trim(state.messages, keep_turns=1, counter=COUNTER).replaced_through_turn == 3


def test_a_compaction_that_kept_nothing_still_rebuilds_a_valid_conversation() -> None:
    entries = [
        *log_of(long_conversation(2, words=5)),
        CompactionEntry(
            at=2.0,
            strategy="summarize",
            digest="All done.",
            replaced_through_turn=2,
            tokens_before=1,
            tokens_after=1,
        ),
    ]
    state = rebuild(entries)
    assert [m["role"] for m in state.messages] == ["user", "assistant"]
    assert state.messages[1]["content"] == [text(DIGEST_ACK)] and state.exchange_turns == []
    # the next turn (3) follows; a later trim does not count the digest pair as a turn
    state.messages += flat(long_conversation(2, words=5))
    result = trim(state.messages, keep_turns=1, counter=COUNTER)
    assert result.replaced_through_turn == 3 and result.first_turn == 1


def test_a_compaction_that_replaced_nothing_changes_nothing() -> None:
    entries: list[Entry] = log_of(long_conversation(2, words=5))
    entries.append(CustomEntry(at=1.0, custom_type=CONTEXT_ATTACHED, data={"turn": 1}))
    result = trim(flat(long_conversation(2, words=5)), keep_turns=3, counter=COUNTER)
    assert not result.compacted
    entries.append(
        CompactionEntry(
            at=2.0,
            strategy="trim",
            digest=result.digest,
            replaced_through_turn=result.replaced_through_turn,
            tokens_before=9,
            tokens_after=0,
        )
    )
    state = rebuild(entries)
    assert state.messages == flat(long_conversation(2, words=5))
    assert state.compactions == 0 and state.context_attached_turn == 1
