"""The incremental search index: BM25Okapi's scores exactly, kept current by every write.

- ``BM25Index`` scores equal rank_bm25.BM25Okapi's on the same corpus (same tokens, k1, b,
  epsilon, idf floor), also after any sequence of inserts, edits and deletions, compared with a
  fresh BM25Okapi over the resulting corpus;
- ``IndexedHistory`` keeps each channel's ``ChannelIndex`` equal to what the history holds
  (evictions, tombstones, thread counters included), and ``ChannelIndex.sync`` reaches the same
  index from a plain history;
- the tool answers the same whichever way its index was fed, stays in its channel, and every
  ranking signal it adds is named in the hit's ``signal``.
"""

from __future__ import annotations

import bisect
import json
import random
from argparse import Namespace
from collections.abc import Iterable
from typing import Any

import numpy as np
import pytest
from chanctx.bot.core.channel_view import EngineView
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.launch.options import SettingsError, resolve_options
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache import ChannelHistory, ts_key
from chanctx.context import FileRef, Message, Names
from chanctx.context.render import author_of, text_of
from chanctx.tools import (
    ChannelTools,
    ChannelView,
    HistoryView,
    IndexedHistory,
    SearchableView,
    SearchScope,
    ThreadLookup,
)
from chanctx.tools._bm25 import BM25Index
from chanctx.tools._columns import SortedKeys
from chanctx.tools._index import ChannelIndex, ThreadStats, document_terms
from chanctx.tools._porter import porter_stem
from chanctx.tools._search import periods
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from tests.unit.tools.test_tools_data import (
    C1,
    C2,
    NAMES,
    SECRET_MARKERS,
    c1_messages,
    c2_messages,
    ok,
    ranked,
    ts,
)

TOKENS = st.sampled_from(["deploy", "fail", "pool", "502", "flag", "a", "b", "c", "d", "e"])
DOCUMENT = st.lists(TOKENS, max_size=12)
QUERY = st.lists(st.one_of(TOKENS, st.just("unseen")), min_size=1, max_size=6)
PARAMETERS = st.tuples(
    st.floats(0.1, 3.0), st.floats(0.0, 0.95), st.floats(0.0, 1.0)
)  # k1, b, epsilon (b < 1: BM25Okapi divides 0 by 0 for an empty document at b = 1)


def _okapi_scores(
    corpus: dict[int, list[str]], query: list[str], k1: float, b: float, epsilon: float
) -> dict[int, float]:
    slots = sorted(corpus)
    okapi = BM25Okapi([corpus[s] for s in slots], k1=k1, b=b, epsilon=epsilon)
    return dict(zip(slots, (float(x) for x in okapi.get_scores(query)), strict=True))


def _index_scores(
    index: BM25Index, corpus: Iterable[int], query: list[str], k1: float, b: float, eps: float
) -> dict[int, float]:
    slots, scores = index.scores(query, k1=k1, b=b, epsilon=eps)
    found = dict(zip(slots.tolist(), scores.tolist(), strict=True))
    return {slot: found.get(slot, 0.0) for slot in corpus}


def _assert_equal(got: dict[int, float], expected: dict[int, float]) -> None:
    assert got.keys() == expected.keys()
    for slot, value in expected.items():
        assert got[slot] == pytest.approx(value, abs=1e-9, rel=0), slot


@given(
    st.lists(DOCUMENT, min_size=1, max_size=25).filter(any),
    QUERY,
    PARAMETERS,
    st.randoms(use_true_random=False),
)
def test_bm25_scores_equal_bm25okapi(
    documents: list[list[str]],
    query: list[str],
    parameters: tuple[float, float, float],
    rng: random.Random,
) -> None:
    k1, b, epsilon = parameters
    slots = rng.sample(range(100), len(documents))  # any slot numbering, any insertion order
    corpus = dict(zip(slots, documents, strict=True))
    index = BM25Index()
    for slot in slots:
        index.add(slot, corpus[slot])
    expected = _okapi_scores(corpus, query, k1, b, epsilon)
    _assert_equal(_index_scores(index, corpus, query, k1, b, epsilon), expected)


_OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["add", "edit", "delete"]), st.integers(0, 15), DOCUMENT),
    min_size=1,
    max_size=60,
)


@given(_OPERATIONS, QUERY, PARAMETERS)
@settings(max_examples=150)
def test_bm25_after_inserts_edits_and_deletes_equals_a_fresh_bm25okapi(
    operations: list[tuple[str, int, list[str]]],
    query: list[str],
    parameters: tuple[float, float, float],
) -> None:
    k1, b, epsilon = parameters
    index, corpus = BM25Index(), dict[int, list[str]]()
    for operation, slot, document in operations:
        if operation == "delete":
            index.remove(slot)
            corpus.pop(slot, None)
            continue
        if slot in corpus:
            if operation == "add":
                continue  # a slot holds one document; "edit" replaces it
            index.remove(slot)
        elif operation == "edit":
            continue
        index.add(slot, document)
        corpus[slot] = document
        if any(corpus.values()):  # BM25Okapi cannot score a corpus without a single token
            expected = _okapi_scores(corpus, query, k1, b, epsilon)
            _assert_equal(_index_scores(index, corpus, query, k1, b, epsilon), expected)
    assert len(index) == len(corpus)
    vocabulary = {token for document in corpus.values() for token in document}
    assert index.vocabulary_size == len(vocabulary)
    if any(corpus.values()):
        okapi = BM25Okapi([corpus[s] for s in sorted(corpus)], k1=k1, b=b, epsilon=epsilon)
        assert index.average_idf() == pytest.approx(okapi.average_idf, abs=1e-9)
        for token in vocabulary:
            assert index.idf(token, epsilon=epsilon) == pytest.approx(okapi.idf[token], abs=1e-9)


def test_a_slot_holds_one_document_and_unknown_removals_are_ignored() -> None:
    index = BM25Index()
    index.add(3, ["deploy", "deploy"])
    with pytest.raises(ValueError, match="slot 3"):
        index.add(3, ["fail"])
    index.remove(99)
    assert index.terms_of(3) == ("deploy",) and index.df("deploy") == 1
    assert index.scores([])[0].size == 0


# -- the channel index, fed by every write of an IndexedHistory --------------------------------

_CHANNELS = ("C1", "C2")
_TEXTS = st.sampled_from(
    [
        "deploy failed on prod",
        "rollback done because of the pool size",
        "the flag is at 50%",
        "502s from checkout-api",
        "",
        "lunch?",
    ]
)
_USERS = st.sampled_from(["U1", "U2", "U3"])


@st.composite
def _writes(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    """Records (roots and replies, some out of order), edits, deletions and reactions."""
    out: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(1, 45))):
        kind = draw(st.sampled_from(["root", "root", "reply", "reply", "edit", "delete", "react"]))
        channel = draw(st.sampled_from(_CHANNELS))
        second = draw(st.integers(0, 30))
        if kind in ("root", "reply"):
            root = draw(st.integers(0, 30)) if kind == "reply" else None
            files = (
                (FileRef(artifact_id="F1", title="grafana 502 rate"),)
                if draw(st.booleans())
                else ()
            )
            out.append(
                (
                    kind,
                    channel,
                    second,
                    root,
                    draw(_USERS),
                    draw(_TEXTS),
                    files,
                    draw(st.booleans()),
                )
            )
        else:
            out.append((kind, channel, second, draw(_TEXTS)))
    return out


def _apply(history: ChannelHistory, write: tuple[Any, ...]) -> None:
    kind, channel, second = write[0], write[1], write[2]
    at = ts(second * 60)
    if kind in ("root", "reply"):
        _, _, _, root, user, text, files, counted = write
        thread_ts = ts(root * 60) if root is not None and root != second else None
        history.record(
            Message(
                channel=channel,
                ts=at,
                thread_ts=thread_ts,
                user_id=user,
                text=text,
                files=files,
                reply_count=2 if counted and thread_ts is None else 0,
            )
        )
    elif kind == "edit":
        history.apply_edit(channel, at, text=write[3] + " edited")
    elif kind == "delete":
        history.delete(channel, at)
    else:
        history.add_reaction(channel, at, "eyes", "U9")


def _reference_stats(messages: list[Message], names: Names) -> dict[int, ThreadStats]:
    """The ranking's thread rule, computed from the whole message list (the pre-index code)."""
    replies: dict[int, list[Message]] = {}
    roots: dict[int, Message] = {}
    for message in messages:
        if message.is_reply:
            assert message.thread_ts is not None
            replies.setdefault(ts_key(message.thread_ts), []).append(message)
        else:
            roots[ts_key(message.ts)] = message
    stats: dict[int, ThreadStats] = {}
    for key, root in roots.items():
        known = sorted(replies.get(key, []), key=lambda r: ts_key(r.ts))
        count = max(root.reply_count, len(known))
        if count == 0:
            continue
        latest = root.latest_reply
        for reply in known:
            if latest is None or ts_key(reply.ts) > ts_key(latest):
                latest = reply.ts
        seen: dict[str, str] = {}
        for reply in known:
            if reply.user_id:
                seen.setdefault(reply.user_id, author_of(reply, names).display_name)
        participants: dict[str, str] = {}
        for user in (*seen, *root.reply_users):
            participants.setdefault(user, names.users.get(user) or seen.get(user) or user)
        stats[key] = ThreadStats(count, latest, tuple(participants.values()))
    return stats


def _check_index(index: ChannelIndex, messages: list[Message], names: Names) -> None:
    """``index`` holds exactly ``messages`` (the channel's live ones), indexed as documented."""
    assert len(index) == len(messages)
    slots = []
    for message in messages:
        slot = index.slot(message.ts)
        assert slot is not None and index.message(slot) == message
        slots.append(slot)
    if not messages:
        assert index.window(None) == (0, -1, -1)
        return
    count, oldest, newest = index.window(None)
    assert (count, index.message(oldest).ts, index.message(newest).ts) == (
        len(messages),
        messages[0].ts,
        messages[-1].ts,
    )
    # Plain BM25: the index's documents are document_terms() of each message, and its scores
    # are BM25Okapi's over exactly those documents.
    documents = [document_terms(m, text_of(m, names), names, "porter") for m in messages]
    for slot, document in zip(slots, documents, strict=True):
        assert set(index.bm25.terms_of(slot)) == set(document)
    if any(documents):
        okapi = BM25Okapi(documents)
        for query in (["deploi", "fail"], ["502"], ["pool", "rollback", "pool"], ["lunch"]):
            expected = okapi.get_scores(query)
            got = _index_scores(index.bm25, slots, query, 1.5, 0.75, 0.25)
            for slot, value in zip(slots, expected, strict=True):
                assert got[slot] == pytest.approx(float(value), abs=1e-9)
    # Threads: the index's stats equal the rule computed from the whole list.
    reference = _reference_stats(messages, names)
    for message in messages:
        if not message.is_reply:
            key = ts_key(message.ts)
            assert index.thread_stats(key, names) == reference.get(key)
    # Conversations: each message's neighbours are the previous/next of its stream.
    streams: dict[str, list[Message]] = {}
    for message in messages:
        streams.setdefault(message.root_ts if message.is_reply else "", []).append(message)
    for stream in streams.values():
        for position, message in enumerate(stream):
            slot = index.slot(message.ts)
            assert slot is not None
            before = stream[position - 1].ts if position else None
            after = stream[position + 1].ts if position + 1 < len(stream) else None
            prev_slot, next_slot = int(index.rows.prev[slot]), int(index.rows.next[slot])
            assert (index.message(prev_slot).ts if prev_slot >= 0 else None) == before
            assert (index.message(next_slot).ts if next_slot >= 0 else None) == after


@given(_writes(), st.integers(3, 12), st.sampled_from([2**30, 6_000, 3_000]))
@settings(max_examples=120)
def test_indexed_history_keeps_each_index_equal_to_the_history(
    writes: list[tuple[Any, ...]], bound: int, max_bytes: int
) -> None:
    # A small byte bound makes writes to one channel evict the oldest of another.
    names = Names(users={"U1": "Priya", "U2": "Dev Patel"})
    indexed = IndexedHistory(max_messages_per_channel=bound, max_bytes=max_bytes)
    plain = ChannelHistory(max_messages_per_channel=bound, max_bytes=max_bytes)
    synced = {channel: ChannelIndex(channel) for channel in _CHANNELS}
    for position, write in enumerate(writes):
        _apply(indexed, write)
        _apply(plain, write)
        if position % 7 == 0:  # searches happen between writes: refresh part of the way
            for channel in _CHANNELS:
                indexed.search_index(channel).refresh(names)
                synced[channel].sync(plain.messages(channel), names)
    for channel in _CHANNELS:
        messages = plain.messages(channel)
        assert indexed.messages(channel) == messages  # it is still a ChannelHistory
        fed = indexed.search_index(channel)
        fed.refresh(names)
        _check_index(fed, messages, names)
        synced[channel].sync(messages, names)
        _check_index(synced[channel], messages, names)


def test_evicted_channels_lose_their_index() -> None:
    history = IndexedHistory(max_channels=2)
    for channel in ("C1", "C2", "C3"):
        history.record(Message(channel=channel, ts=ts(0), text="deploy"))
    assert history.channels() == ["C2", "C3"]
    evicted = history.search_index("C1")
    evicted.refresh(NAMES)
    assert len(evicted) == 0
    kept = history.search_index("C3")
    kept.refresh(NAMES)
    assert len(kept) == 1


# -- the tool over the index ------------------------------------------------------------------

INTENTS = [
    {"intent": "why did checkout fail?"},
    {"intent": "v2.30.4"},
    {"intent": "pay-v2 feature flag plan", "max_results": 3},
    {"intent": "deploy", "authors": ["Dev"]},
    {"intent": "what's going on?", "max_results": 20},
    {"intent": "checkout", "since": ts(3_600, 100)},
    {"intent": "grafana 502"},
]


def _histories() -> tuple[IndexedHistory, ChannelHistory]:
    messages = sorted(c1_messages() + c2_messages(), key=lambda m: float(m.ts))
    indexed, plain = IndexedHistory(), ChannelHistory()
    for message in messages:
        indexed.record(message)
        plain.record(message)
    return indexed, plain


def _answers(view: ChannelView) -> list[str]:
    tools = ChannelTools(view, names=NAMES)
    return [tools.call("channel_context", args).content for args in INTENTS]


def test_the_answer_does_not_depend_on_how_the_index_was_fed() -> None:
    indexed, plain = _histories()
    assert _answers(HistoryView(indexed, C1)) == _answers(HistoryView(plain, C1))
    # After edits and deletions too, the fed index and the synced one agree.
    for history in (indexed, plain):
        history.apply_edit(C1, ts(3_720, 100), text="Errors started after v2.30.4, checkout down")
        history.delete(C1, ts(3_900, 100))
        history.delete(C1, ts(-3_600, 100))
    first = _answers(HistoryView(indexed, C1))
    assert first == _answers(HistoryView(plain, C1))
    assert not any("pool size was set to 5" in answer for answer in first)
    assert any("checkout down" in answer for answer in first)


class _ForeignView:
    """A view of C1 whose search_index wrongly serves C2's index."""

    def __init__(self, history: IndexedHistory) -> None:
        self.inner = HistoryView(history, C1)
        self.history = history

    @property
    def channel(self) -> str:
        return C1

    def messages(self) -> list[Message]:
        return self.inner.messages()

    def get(self, ts: str) -> Message | None:
        return self.inner.get(ts)

    def thread(self, thread_ts: str) -> ThreadLookup:
        return self.inner.thread(thread_ts)

    def search_index(self) -> SearchScope:
        return SearchScope(self.history.search_index(C2))


@pytest.mark.parametrize("loose", [False, True])
def test_search_stays_in_its_channel(loose: bool) -> None:
    indexed, _ = _histories()
    view: ChannelView = _ForeignView(indexed) if loose else HistoryView(indexed, C1)
    assert isinstance(view, SearchableView)
    tools = ChannelTools(view, names=NAMES)
    for intent in ("payroll salary zebrafish", "pool", "forward sheet", "anything new?"):
        answer = ok(tools.call("channel_context", {"intent": intent, "max_results": 50}))
        dumped = json.dumps(answer["results"])  # the note may echo the intent's own words
        assert not any(marker in dumped for marker in SECRET_MARKERS), intent
        assert {r["message_id"] for r in answer["results"]} <= {m.ts for m in c1_messages()}
        assert answer["searched"] == len(c1_messages())


def test_hidden_messages_are_left_out_of_search() -> None:
    indexed, _ = _histories()
    pool = ts(3_900, 100)

    class Hiding(HistoryView):
        def search_index(self) -> SearchScope:
            return SearchScope(indexed.search_index(C1), hidden=frozenset({pool}))

    answer = ok(
        ChannelTools(Hiding(indexed, C1), names=NAMES).call(
            "channel_context", {"intent": "pool size", "max_results": 50}
        )
    )
    assert pool not in {r["message_id"] for r in answer["results"]}
    assert answer["searched"] == len(c1_messages()) - 1


def test_the_engine_view_serves_the_history_index_and_hides_the_anchor() -> None:
    engine = ContextEngine(me=SelfIdentity(user_id="UBOT"), names=NAMES, history=IndexedHistory())
    for message in c1_messages():
        engine.history.record(message)
    view = EngineView(engine, C1, hidden={ts(3_900, 100)})
    assert isinstance(view, ChannelView) and isinstance(view, SearchableView)
    scope = view.search_index()
    assert scope.index is engine.history.search_index(C1)  # type: ignore[attr-defined]
    assert scope.hidden == {ts(3_900, 100)} and scope.messages is None
    plain_engine = ContextEngine(me=SelfIdentity(), names=NAMES)
    for message in c1_messages():
        plain_engine.history.record(message)
    plain = EngineView(plain_engine, C1, hidden={ts(3_900, 100)})
    assert plain.search_index().messages is not None  # synced from channel_messages()
    # Either way the tool answers the same, and never with the hidden anchor.
    answers = [
        ChannelTools(v, names=NAMES).call("channel_context", {"intent": "pool size 502"}).content
        for v in (view, plain)
    ]
    assert answers[0] == answers[1] and ts(3_900, 100) not in answers[0]


def test_the_history_bound_comes_from_the_environment() -> None:
    assert resolve_options(Namespace(), {}, "run").history_per_channel == 5_000
    env = {"CHANCTX_HISTORY_PER_CHANNEL": "100_000"}
    assert resolve_options(Namespace(), env, "run").history_per_channel == 100_000
    for bad in ("0", "-5", "lots", "1e5"):
        with pytest.raises(SettingsError, match="CHANCTX_HISTORY_PER_CHANNEL"):
            resolve_options(Namespace(), {"CHANCTX_HISTORY_PER_CHANNEL": bad}, "run")


# -- every ranking signal is explained --------------------------------------------------------

T_MARCH = 1_772_366_400  # 2026-03-01T12:00:00Z
T_MAY = 1_777_636_800  # 2026-05-01T12:00:00Z
PEOPLE = Names(users={"UANA": "Ana", "UBEN": "Ben", "UCY": "Cy"})


def _say(seconds: int, user: str, text: str, **extra: Any) -> Message:
    return Message(channel=C1, ts=f"{seconds}.000100", user_id=user, text=text, **extra)


def _history(messages: list[Message]) -> IndexedHistory:
    history = IndexedHistory()
    for message in messages:
        history.record(message)
    return history


def _by_text(history: IndexedHistory, intent: str) -> dict[str, tuple[int, str]]:
    hits = ranked(history, intent=intent, names=PEOPLE)
    return {hit.text: (i, hit.signal) for i, hit in enumerate(hits)}


def test_conversational_context_raises_the_answer_next_to_the_question() -> None:
    question = "Anyone know why the nightly build is red again?"
    answer_text = "Yes: the arm64 runner ran out of disk, build is fixed now"
    lone = "Build passed after I bumped node"
    history = _history(
        [
            _say(T_MARCH, "UANA", question),
            _say(T_MARCH + 60, "UBEN", answer_text),
            _say(T_MARCH + 7_200, "UCY", "lunch at noon?"),  # too late to be context
            _say(T_MARCH + 2 * 86_400, "UCY", lone),
        ]
    )
    found = _by_text(history, "why is the nightly build red")
    rank, signal = found[answer_text]
    assert signal.startswith("keyword:build; context:nightly,build,red")
    assert rank < found[lone][0]  # same keyword, no conversation around it
    assert "context" not in found[lone][1]
    assert "lunch at noon?" not in found  # context raises matches, it never adds non-matches


def test_a_month_named_in_the_intent_prefers_messages_posted_then() -> None:
    history = _history(
        [
            _say(T_MARCH, "UANA", "deploy of the billing service went out"),
            _say(T_MAY, "UBEN", "deploy of the billing service went out again"),
        ]
    )
    hits = ranked(history, intent="billing deploy in March", names=PEOPLE)
    assert hits[0].message.ts == f"{T_MARCH}.000100"
    assert "date:March" in hits[0].signal
    assert "date:" not in hits[1].signal
    tools = ChannelTools(HistoryView(history, C1), names=PEOPLE)
    plain = ok(tools.call("channel_context", {"intent": "billing deploy"}))["results"]
    assert plain[0]["when"].startswith("2026-05-01")  # without a date, the newer one


def test_thread_replies_and_causes_say_why_they_rank() -> None:
    history = _history(
        [
            _say(
                T_MARCH, "UANA", "Search is timing out for everyone", thread_ts=f"{T_MARCH}.000100"
            ),
            _say(
                T_MARCH + 300,
                "UBEN",
                "Found it: the index lost a replica",
                thread_ts=f"{T_MARCH}.000100",
            ),
        ]
    )
    hits = ranked(history, intent="why is search timing out", names=PEOPLE)
    reply = next(hit for hit in hits if hit.text.startswith("Found it"))
    assert reply.signal.split("; ")[:2] == ["thread:search,timing", "states_cause"]


@pytest.mark.parametrize(
    ("intent", "expected"),
    [
        ("when did she go camping in July?", [(None, 7)]),
        ("the outage on May 8, 2023", [(2023, 5)]),
        ("the 8th of May", [(None, 5)]),
        ("may I ask what happened in 2024", [(2024, None)]),
        ("July 2023 and in 2022", [(2023, 7), (2022, None)]),
        ("deploy of v2.30.4 at 2000 rps", []),
    ],
)
def test_periods_named_in_an_intent(
    intent: str, expected: list[tuple[int | None, int | None]]
) -> None:
    assert periods(intent) == expected


def test_porter_stems_like_the_paper() -> None:
    pairs = {
        "caresses": "caress", "ponies": "poni", "cats": "cat", "agreed": "agre",
        "plastered": "plaster", "motoring": "motor", "hopping": "hop", "falling": "fall",
        "filing": "file", "happy": "happi", "relational": "relat", "conditional": "condit",
        "digitizer": "digit", "generalization": "gener", "effective": "effect",
        "adjustment": "adjust", "controll": "control", "deploys": "deploi", "painted": "paint",
    }  # fmt: skip
    assert {word: porter_stem(word) for word in pairs} == pairs


def test_columns_grow_past_their_first_capacity() -> None:
    index = ChannelIndex(C1)
    for second in range(300):
        index.upsert(_say(T_MARCH + second, "UANA", f"message {second} deploy"), PEOPLE)
    assert index.capacity >= 300 and len(index) == 300
    assert np.count_nonzero(index.rows.live) == 300


# Seeded random walks, not Hypothesis: a seed is all the input there is.
@pytest.mark.parametrize("seed", [0, 1, 2, 7, 42, 1234, 2**31 - 1, 2**32])
def test_sorted_keys_behave_like_a_sorted_list(seed: int) -> None:
    rng = random.Random(seed)
    keys, model = SortedKeys(), list[int]()
    for _ in range(4_000):  # enough to cross the 1,024-item compaction of the dead prefix
        roll = rng.random()
        if roll < 0.55:
            item = rng.randrange(10_000) if rng.random() < 0.2 else (model[-1] + 1 if model else 0)
            keys.insert(item)
            if item not in model:
                model.insert(bisect.bisect_left(model, item), item)
        elif roll < 0.8 and model:
            count = rng.randint(1, 30)
            assert keys.pop_oldest(count) == model[:count]
            del model[:count]
        else:
            item = rng.choice(model) if model and rng.random() < 0.8 else -1
            assert keys.remove(item) == (item in model)
            if item in model:
                model.remove(item)
        assert len(keys) == len(model)
    assert [keys[i] for i in range(len(keys))] == model
    if model:
        assert keys[-1] == model[-1] and keys.bisect(model[len(model) // 2]) == len(model) // 2
