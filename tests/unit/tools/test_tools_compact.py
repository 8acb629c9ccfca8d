"""channel_context's compact answer: many hits per budget, nothing the reader holds repeated,
the bot's own exchanges after people's messages."""

from __future__ import annotations

import json
import random

from chanctx.cache import ChannelHistory
from chanctx.context import Message, Names, default_counter
from chanctx.tools import (
    DEFAULT_OUTPUT_BUDGET,
    HELD,
    ChannelTools,
    HistoryView,
    IndexedHistory,
    SearchScope,
    read_context_output,
)
from chanctx.tools._context_tool import minute
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.tools.test_tools_data import C1, NAMES, build_history, ok, tools_for, ts

COUNTER = default_counter()
PEOPLE = Names(users={"UANA": "Ana", "UBEN": "Ben", "UCY": "Cy", "UBOT": "chanctx"})
# Chat as people write it: a clause or two, a name, a number, sometimes a question.
OPENERS = ["ok so", "fwiw", "heads up:", "quick one:", "hmm,", "yeah", "btw", "so"]
SUBJECTS = ["the deploy", "the deploy pipeline", "our deploy of billing", "the canary deploy"]
TAILS = [
    "failed again on the migration step, looking into it now",
    "is green, 0.3% errors which is the usual noise",
    "took 14 minutes today, twice as long as last week?",
    "is blocked until Ana merges the config change",
    "went fine in staging, prod after lunch if nobody objects",
    "needs a rollback plan before Friday, can someone write it up",
    "is waiting on the k8s upgrade, ETA Thursday",
]


def chat(seed: int, count: int) -> list[Message]:
    rng = random.Random(seed)
    users = ["UANA", "UBEN", "UCY"]
    return [
        Message(
            channel=C1,
            ts=ts(600 * index),
            user_id=rng.choice(users),
            text=f"{rng.choice(OPENERS)} {rng.choice(SUBJECTS)} {rng.choice(TAILS)}",
        )
        for index in range(count)
    ]


def tools_over(messages: list[Message], **options: object) -> ChannelTools:
    history = IndexedHistory()
    for message in messages:
        history.record(message)
    return ChannelTools(HistoryView(history, C1), names=PEOPLE, **options)  # type: ignore[arg-type]


@given(st.integers(0, 10_000))
@settings(max_examples=10, deadline=None)
def test_the_default_budget_holds_at_least_25_typical_chat_hits(seed: int) -> None:
    tools = tools_over(chat(seed, 80))
    result = tools.call("channel_context", {"intent": "deploy", "max_results": 50})
    rows = read_context_output(result.content)
    assert len(rows) >= 25
    assert COUNTER.count(result.content) <= DEFAULT_OUTPUT_BUDGET


def test_a_row_is_ts_when_who_text_and_thread() -> None:
    answer = json.loads(
        tools_for().call("channel_context", {"intent": "why did checkout fail?"}).content
    )
    root = answer["results"][0]
    reply = next(row for row in answer["results"] if row[0] == ts(3_900, 100))
    assert root == [
        ts(3_600, 100),
        minute(ts(3_600, 100)),
        "Priya",
        "Checkout is failing for about 20% of users, 502s from checkout-api :rotating_light:",
        f"5 replies, last {minute(ts(4_200, 100))}",
    ]
    assert reply[0] == ts(3_900, 100) and reply[2] == "Dev"
    assert reply[4] == f"thread {ts(3_600, 100)}"
    assert set(answer) == {"results", "searched", "range", "note"}
    # Nothing but the rows and one count and range: no key repeated per result.
    assert '"message_id"' not in json.dumps(answer) and '"author"' not in json.dumps(answer)


def test_a_hit_the_reader_holds_is_named_by_its_ts_only() -> None:
    history = build_history()
    pool = ts(3_900, 100)

    class Holding(HistoryView):
        def search_index(self) -> SearchScope:
            scope = super().search_index()
            return SearchScope(scope.index, messages=scope.messages, held=frozenset({pool}))

    args = {"intent": "why did checkout fail?", "max_results": 10}
    plain = ok(ChannelTools(HistoryView(history, C1), names=NAMES).call("channel_context", args))
    holding = ChannelTools(Holding(history, C1), names=NAMES).call("channel_context", args)
    rows = ok(holding)["results"]
    # Same ranking, the held one in its place as [ts, "in context"], its text nowhere.
    assert [r["message_id"] for r in rows] == [r["message_id"] for r in plain["results"]]
    held = next(r for r in rows if r["message_id"] == pool)
    assert held == {"message_id": pool, "held": True}
    assert [pool, HELD] in json.loads(holding.content)["results"]
    assert "pool size" not in holding.content


def test_the_bots_own_exchanges_rank_after_peoples_messages() -> None:
    people = [
        Message(channel=C1, ts=ts(0), user_id="UANA", text="the billing deploy needs a rollback"),
        Message(channel=C1, ts=ts(60), user_id="UBEN", text="rollback plan for billing is in"),
    ]
    question = Message(
        channel=C1,
        ts=ts(3_600),
        user_id="UCY",
        text="<@UBOT> what is the rollback plan for the billing deploy? rollback billing deploy",
        mentions_self=True,
    )
    answer = Message(
        channel=C1,
        ts=ts(3_660),
        thread_ts=ts(3_600),
        user_id="UBOT",
        is_self=True,
        text="The rollback plan for the billing deploy: rollback billing deploy billing",
    )
    rows = ok(tools_over([*people, question, answer]).call("channel_context", {"intent": "billing deploy rollback plan"}))["results"]  # fmt: skip
    assert {r["message_id"] for r in rows[:2]} == {ts(0), ts(60)}
    assert {r["message_id"] for r in rows[2:]} == {ts(3_600), ts(3_660)}
    assert {r["who"] for r in rows[2:]} == {"Cy", "chanctx (you)"}


def test_one_long_paste_cannot_take_more_than_a_tenth_of_the_budget() -> None:
    paste = "deploy log: " + " ".join(f"step {i} ok, deploy continues." for i in range(2_000))
    messages = [Message(channel=C1, ts=ts(-600), user_id="UANA", text=paste), *chat(3, 30)]
    result = tools_over(messages).call(
        "channel_context", {"intent": "deploy log", "max_results": 30}
    )
    answer = ok(result)
    first = next(r for r in answer["results"] if r["message_id"] == ts(-600))
    assert first["text"].startswith("deploy log: step 0 ok") and first["text"].endswith(" ...")
    assert COUNTER.count(first["text"]) <= DEFAULT_OUTPUT_BUDGET // 10
    assert len(answer["results"]) >= 20  # the rest still fit
    assert answer["truncated"] is True and "was cut" in answer["note"]


def test_files_shared_with_text_are_named_in_the_row() -> None:
    from chanctx.context import FileRef

    shared = Message(
        channel=C1,
        ts=ts(0),
        user_id="UANA",
        text="latency after the deploy",
        files=(FileRef(artifact_id="F1", title="p99 latency graph"),),
    )
    (row,) = ok(tools_over([shared]).call("channel_context", {"intent": "latency graph"}))[
        "results"
    ]
    assert row["text"] == "latency after the deploy [shared p99 latency graph]"


def test_a_plain_history_gives_the_same_rows_as_an_indexed_one() -> None:
    messages = chat(5, 40)
    plain = ChannelHistory()
    for message in messages:
        plain.record(message)
    args = {"intent": "deploy rollback", "max_results": 50}
    via_plain = ChannelTools(HistoryView(plain, C1), names=PEOPLE).call("channel_context", args)
    assert via_plain.content == tools_over(messages).call("channel_context", args).content
