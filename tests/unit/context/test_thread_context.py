"""ThreadContext builder: budget, root in full, most recent kept, truncation exact."""

from __future__ import annotations

import pytest
from chanctx.context import (
    Message,
    Names,
    ThreadContext,
    build_thread_context,
    default_counter,
    iso_from_ts,
    wire_json,
)
from chanctx.context._truncate import sentence_boundaries
from chanctx.context.render import text_of
from hypothesis import given
from hypothesis import strategies as st

from tests.support.strategies import BASE, threads, ts_at

COUNTER = default_counter()
budgets = st.integers(0, 6_000)


def _root_only_tokens(root: Message, replies: list[Message]) -> int:
    return COUNTER.count(wire_json(build_thread_context(root, replies, budget_tokens=0)))


@given(threads(), budgets)
def test_serialized_json_fits_the_budget(
    thread: tuple[Message, list[Message]], budget: int
) -> None:
    root, replies = thread
    context = build_thread_context(root, replies, budget_tokens=budget)
    tokens = COUNTER.count(wire_json(context))
    # The root is never cut, so a root larger than the budget is the one way to exceed it.
    assert tokens <= budget or (not context.replies and tokens == _root_only_tokens(root, replies))


@given(threads(), budgets)
def test_root_is_always_whole(thread: tuple[Message, list[Message]], budget: int) -> None:
    root, replies = thread
    context = build_thread_context(root, replies, budget_tokens=budget)
    assert context.root.text == text_of(root, Names())
    assert context.root.message_id == context.thread_id == root.ts


@given(threads(), budgets)
def test_most_recent_replies_kept_in_order(
    thread: tuple[Message, list[Message]], budget: int
) -> None:
    root, replies = thread
    context = build_thread_context(root, replies, budget_tokens=budget)
    kept = [reply.message_id for reply in context.replies]
    assert kept == [
        m.ts for m in replies[len(replies) - len(kept) :]
    ]  # a newest suffix, oldest first


@given(threads(), budgets)
def test_truncation_block_is_exact(thread: tuple[Message, list[Message]], budget: int) -> None:
    root, replies = thread
    context = build_thread_context(root, replies, budget_tokens=budget)
    truncation = context.truncation
    assert truncation.total_replies == len(replies)
    assert truncation.included_replies == len(context.replies)
    assert truncation.strategy == "most_recent"
    omitted = replies[: len(replies) - len(context.replies)]
    if omitted:
        assert truncation.omitted_range_ts == (
            iso_from_ts(omitted[0].ts),
            iso_from_ts(omitted[-1].ts),
        )
    else:
        assert truncation.omitted_range_ts is None


@pytest.mark.slow
@given(threads(), budgets)
def test_only_the_oldest_included_reply_is_cut_at_a_sentence(
    thread: tuple[Message, list[Message]], budget: int
) -> None:
    root, replies = thread
    context = build_thread_context(root, replies, budget_tokens=budget)
    by_id = {m.ts: m for m in replies}
    for index, reply in enumerate(context.replies):
        original = text_of(by_id[reply.message_id], Names())
        if not reply.is_truncated:
            assert reply.text == original
            continue
        assert index == 0
        assert reply.text.endswith("...")
        kept = reply.text.removesuffix(" ...")
        assert any(original[:end].rstrip() == kept for end in sentence_boundaries(original))


@given(threads(), budgets)
def test_json_round_trips(thread: tuple[Message, list[Message]], budget: int) -> None:
    root, replies = thread
    context = build_thread_context(root, replies, budget_tokens=budget)
    assert ThreadContext.model_validate_json(wire_json(context)) == context


def _long_thread(count: int, words: int = 30) -> tuple[Message, list[Message]]:
    root = Message(
        channel="C1", ts=ts_at(0), thread_ts=ts_at(0), user_id="U1", text="Prod is down."
    )
    body = " ".join(["The error rate climbed again after the retry."] * (words // 8 + 1))
    replies = [
        Message(channel="C1", ts=ts_at(i + 1), thread_ts=root.ts, user_id="U2", text=body)
        for i in range(count)
    ]
    return root, replies


def test_default_budget_is_8000_and_keeps_the_newest() -> None:
    root, replies = _long_thread(2_000)
    context = build_thread_context(root, replies)
    assert 0 < len(context.replies) < 2_000
    assert COUNTER.count(wire_json(context)) <= 8_000
    assert context.replies[-1].message_id == replies[-1].ts


def test_a_reply_cut_to_fit_ends_with_ellipsis() -> None:
    root = Message(channel="C1", ts=ts_at(0), thread_ts=ts_at(0), user_id="U1", text="Status?")
    long_reply = Message(
        channel="C1",
        ts=ts_at(1),
        thread_ts=root.ts,
        user_id="U2",
        text=" ".join(f"Step {i} is done and verified." for i in range(200)),
    )
    budget = (
        COUNTER.count(wire_json(build_thread_context(root, [long_reply], budget_tokens=0))) + 300
    )
    context = build_thread_context(root, [long_reply], budget_tokens=budget)
    assert len(context.replies) == 1
    reply = context.replies[0]
    assert reply.is_truncated and reply.text.startswith("Step 0 is done and verified.")
    assert reply.text.endswith("verified. ...")
    assert context.truncation.included_replies == 1 and context.truncation.omitted_range_ts is None


@pytest.mark.slow
def test_build_cost_does_not_depend_on_thread_length() -> None:
    # Replies past the budget must never be rendered: count how many are touched.
    touched: list[int] = []

    class Spy(list[Message]):
        def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
            if isinstance(index, int):
                touched.append(index)
            return super().__getitem__(index)

    root, replies = _long_thread(50_000)
    context = build_thread_context(root, Spy(replies), budget_tokens=2_000)
    # The included replies, the one that did not fit, and a constant few for the ends of the
    # omitted range: never anything proportional to the 50,000 replies.
    assert len(context.replies) < 100
    assert len(touched) <= len(context.replies) + 6


def test_names_are_resolved_and_bots_marked() -> None:
    root = Message(channel="C1", ts=ts_at(0), thread_ts=ts_at(0), user_id="U1", text="hi <@U2>")
    bot = Message(
        channel="C1",
        ts=ts_at(5),
        thread_ts=root.ts,
        bot_id="B1",
        is_bot=True,
        author_name="deploybot",
        text="Deploy 42 finished.",
    )
    context = build_thread_context(root, [bot], names=Names(users={"U1": "Sam", "U2": "Ana"}))
    assert context.root.text == "hi @Ana"
    assert context.root.author.display_name == "Sam"
    assert context.replies[0].author.model_dump() == {
        "user_id": "B1",
        "display_name": "deploybot",
        "is_bot": True,
    }
    assert context.root.ts == iso_from_ts(ts_at(0)) == f"{_iso(BASE)}"


def _iso(seconds: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
