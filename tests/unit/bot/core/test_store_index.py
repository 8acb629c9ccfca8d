"""A channel's index built from the channel store after a restart ranks exactly as the index fed
by live events does for the same messages; a channel larger than the byte budget keeps its
newest part and still finds an old fact through the store's full-text index; changes to
messages older than the history's window reach the index."""

from __future__ import annotations

import json
import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.channel_view import EngineView
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.store_index import StoreIndexes
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache.channel_store import SqliteChannelStore
from chanctx.context import Message, Names
from chanctx.tools import ChannelTools, IndexedHistory
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.slack_events import BOT_USER, CHANNEL, TEAM, message, ts

ME = SelfIdentity(user_id=BOT_USER, bot_id="B0BOT00001")
NAMES = Names(users={"U1": "Sam", "U2": "Ana", "U3": "Lee"})
WORDS = ("checkout", "deploy", "failed", "because", "pool", "refund", "vault", "green", "lunch")
INTENTS = (
    "why did checkout fail?", "deploy pool", "what did Ana say about refund", "lunch", "vault",
)  # fmt: skip


def engine(record: ChannelRecord | None, *, per_channel: int = 5_000, mb: int = 64) -> Any:
    return ContextEngine(
        me=ME,
        names=NAMES,
        history=IndexedHistory(max_messages_per_channel=per_channel, max_bytes=mb * 2**20),
        record=record,
    )


def restarted_engine(record: ChannelRecord, *, wait: float, per_channel: int = 5_000) -> Any:
    """An engine started again on ``record``, its answers waiting at most ``wait`` seconds."""
    return ContextEngine(
        me=ME,
        names=NAMES,
        history=IndexedHistory(max_messages_per_channel=per_channel),
        record=record,
        settings=ContextSettings(max_wait_seconds=wait),
    )


@contextmanager
def stored(data: Path) -> Iterator[ChannelRecord]:
    opened = OpenStore(SqliteChannelStore(data, synchronous="OFF"))
    try:
        yield ChannelRecord(opened, TEAM)
    finally:
        opened.close()


def store_fact_among_notes(data: Path, fact: str, count: int) -> None:
    """``count`` messages in the store: ``fact`` (by U1) first, then routine notes (by U2)."""
    with stored(data) as record:
        writer = engine(record)
        writer.handle(message(ts(0), fact, user="U1"))
        for n in range(1, count):
            writer.handle(message(ts(n), f"routine note {n}", user="U2"))


def ranked(eng: ContextEngine, intent: str) -> list[tuple[Any, ...]]:
    """channel_context's rows, whole: ts, time, author, text, thread counters."""
    tools = ChannelTools(EngineView(eng, CHANNEL), names=NAMES, now=lambda: 1_781_100_000.0)
    out = json.loads(tools.call("channel_context", {"intent": intent, "max_results": 20}).content)
    return [tuple(row) for row in out["results"]]


# A small channel: each message top-level or a reply to an earlier top-level message, a few
# words from a small vocabulary, one of three people; afterwards some are edited or deleted.
Drawn = list[tuple[list[str], str, int | None, str | None]]
channels = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
        st.sampled_from(("U1", "U2", "U3")),
        st.one_of(st.none(), st.integers(min_value=0, max_value=30)),
        st.sampled_from((None, None, None, "edit", "delete")),
    ),
    min_size=1,
    max_size=30,
)


def events_of(drawn: Drawn) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    roots: list[str] = []
    for n, (words, user, parent, change) in enumerate(drawn):
        extra: dict[str, Any] = {}
        if parent is not None and roots:
            extra["thread_ts"] = roots[parent % len(roots)]
        else:
            roots.append(ts(n))
        posted = message(ts(n), " ".join(words), user=user, **extra)
        events.append(posted)
        at = ts(1_000 + n)
        if change == "edit":
            changed = {
                **posted,
                "text": "vault " + " ".join(reversed(words)),
                "edited": {"user": user, "ts": at},
            }
            later.append(
                {
                    "type": "message",
                    "subtype": "message_changed",
                    "channel": CHANNEL,
                    "channel_type": "channel",
                    "ts": at,
                    "event_ts": at,
                    "message": changed,
                    "previous_message": posted,
                }
            )
        elif change == "delete":
            later.append(
                {
                    "type": "message",
                    "subtype": "message_deleted",
                    "channel": CHANNEL,
                    "channel_type": "channel",
                    "deleted_ts": posted["ts"],
                    "hidden": True,
                    "ts": at,
                    "event_ts": at,
                    "previous_message": posted,
                }
            )
    return events + later


@pytest.mark.slow
@settings(deadline=None)
@given(channels)
def test_the_index_built_from_the_store_ranks_as_the_live_one(drawn: Drawn) -> None:
    events = events_of(drawn)
    live = engine(None)
    for event in events:
        live.handle(event)
    with tempfile.TemporaryDirectory() as tmp:
        with stored(Path(tmp)) as record:
            writer = engine(record)
            for event in events:
                writer.handle(event)
        with stored(Path(tmp)) as record:  # a restart: empty caches over the same store
            restarted = engine(record)
            assert restarted.held(CHANNEL) == 0
            for intent in INTENTS:
                assert ranked(restarted, intent) == ranked(live, intent), intent


@pytest.mark.slow
def test_a_channel_larger_than_the_budget_still_finds_an_old_fact(tmp_path: Path) -> None:
    with stored(tmp_path) as record:
        writer = engine(record)
        for n in range(3_000):
            text = f"status update {n}: builds green, queue depth {n % 17}"
            if n == 10:
                text = "the vault combination is 4417 amber"
            writer.handle(message(ts(n), text, user="U1"))
    with stored(tmp_path) as record:
        restarted = engine(record, per_channel=200, mb=1)  # about 1,000 messages fit
        assert restarted.indexes is not None
        found = ranked(restarted, "what is the vault combination?")
        assert found and found[0][0] == ts(10)
        indexed = restarted.indexes.indexed(CHANNEL)
        assert 200 < indexed < 3_000  # the newest that fit, plus what the search pulled in


def test_a_large_index_pulls_at_most_its_few_older_matches(tmp_path: Path) -> None:
    # 20 old messages hold "vault"; the index holds only the newest part. A large index asks
    # the store for its best few older matches; a small one for all it can use.
    with stored(tmp_path) as record:
        writer = engine(record)
        for n in range(3_000):
            text = f"vault note {n}" if n < 20 else f"status update {n}: builds green"
            writer.handle(message(ts(n), text, user="U1"))
    pulled: dict[int, int] = {}
    for large in (100, 10**6):
        with stored(tmp_path) as record:
            indexes = StoreIndexes(
                record, max_bytes=2**19, held=lambda _channel: [], names=lambda: NAMES,
                older=3, large=large,
            )  # fmt: skip
            scope = indexes.scope(CHANNEL, wait=30.0)
            held = len(scope.index)
            assert 100 < held < 3_000  # the newest part (over ``large`` in the first round)
            with scope.index.lock:
                scope.prepare("vault", NAMES)
                pulled[large] = len(scope.index) - held
    assert pulled == {100: 3, 10**6: 20}


def test_a_word_the_index_holds_enough_of_is_not_asked_of_the_store(tmp_path: Path) -> None:
    # "vault" is in 20 old messages and in every 10th of the rest; "quorum" only in the old
    # ones. Once the index holds ``held_enough`` messages with a word, its older matches are not
    # asked for; a word it holds few of still brings its older matches.
    with stored(tmp_path) as record:
        writer = engine(record)
        for n in range(3_000):
            if n < 20:
                text = f"vault quorum note {n}"
            else:
                text = f"{'vault ' if n % 10 == 0 else ''}status update {n}: builds green"
            writer.handle(message(ts(n), text, user="U1"))
    pulled: dict[tuple[int, str], int] = {}
    for enough in (40, 10**6):
        for intent in ("vault", "quorum"):
            with stored(tmp_path) as record:
                indexes = StoreIndexes(
                    record, max_bytes=2**19, held=lambda _channel: [], names=lambda: NAMES,
                    held_enough=enough,
                )  # fmt: skip
                scope = indexes.scope(CHANNEL, wait=30.0)
                held = len(scope.index)
                assert 400 < held < 3_000  # the newest part, over 40 with "vault"
                with scope.index.lock:
                    scope.prepare(intent, NAMES)
                    pulled[enough, intent] = len(scope.index) - held
    older_vault = 20 + sum(1 for n in range(20, 3_000 - held) if n % 10 == 0)
    assert pulled == {(40, "vault"): 0, (40, "quorum"): 20, (10**6, "vault"): older_vault,
                      (10**6, "quorum"): 20}  # fmt: skip


def test_an_answer_does_not_wait_for_a_build_with_more_than_a_page_to_read(
    tmp_path: Path,
) -> None:
    # The build reads the channel (more than a page of 50), then is held before indexing it.
    # An answer asked meanwhile, allowed to wait an hour, ranks the interim index at once: the
    # build cannot end within the wait. Its messages still reach the answer (FTS5's matches).
    store_fact_among_notes(tmp_path, "the vault code is 4412", 200)
    indexing = threading.Event()
    go_on = threading.Event()

    def names() -> Names:  # the build asks for the names between reading and indexing
        indexing.set()
        go_on.wait(30)
        return NAMES

    with stored(tmp_path) as record:
        indexes = StoreIndexes(
            record, max_bytes=2**22, held=lambda _channel: [], names=names, build_wait=3_600.0,
            page=50,
        )  # fmt: skip
        try:
            indexes.start(CHANNEL)
            assert indexing.wait(30)
            scope = indexes.scope(CHANNEL, wait=3_600.0)
            assert indexes.indexed(CHANNEL) == 0  # not waited for
            with scope.index.lock:
                scope.prepare("vault code", NAMES)
                assert scope.index.slot(ts(0)) is not None
        finally:
            go_on.set()
        deadline = time.monotonic() + 60
        while not indexes.indexed(CHANNEL):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert indexes.indexed(CHANNEL) == 200  # the build ends, and later answers rank it
        assert indexes.scope(CHANNEL, wait=0.0).index is not scope.index


def test_waiting_for_a_build_ends_when_it_is_built_or_has_failed(tmp_path: Path) -> None:
    store_fact_among_notes(tmp_path, "the vault code is 4412", 120)

    def broken() -> Names:
        raise RuntimeError("names unavailable")

    with stored(tmp_path) as record:
        built = StoreIndexes(record, max_bytes=2**22, held=lambda _c: [], names=lambda: NAMES)
        assert built.wait_built(CHANNEL, 60.0) == (True, 120)
        assert built.indexed(CHANNEL) == 120
        failing = StoreIndexes(record, max_bytes=2**22, held=lambda _c: [], names=broken)
        assert failing.wait_built(CHANNEL, 60.0)[0]  # a failed build is not waited on forever
        assert failing.indexed(CHANNEL) == 0


def test_an_edit_and_a_deletion_older_than_the_history_reach_the_index(tmp_path: Path) -> None:
    with stored(tmp_path) as record:
        writer = engine(record)
        for n in range(300):
            writer.handle(message(ts(n), f"routine note {n}", user="U2"))
        writer.handle(message(ts(300), "the pager rotation moves to Lee", user="U1"))
    with stored(tmp_path) as record:
        restarted = engine(record, per_channel=50)
        assert ranked(restarted, "pager rotation")[0][0] == ts(300)
        assert restarted.held(CHANNEL) <= 50
        old = message(ts(5), "routine note 5")
        restarted.handle(
            {
                "type": "message", "subtype": "message_changed", "channel": CHANNEL,
                "channel_type": "channel", "ts": ts(400), "event_ts": ts(400),
                "message": {**old, "text": "the escalation policy lives in the wiki",
                            "edited": {"user": "U2", "ts": ts(400)}},
                "previous_message": old,
            }
        )  # fmt: skip
        assert ranked(restarted, "escalation policy")[0][0] == ts(5)
        restarted.handle(
            {
                "type": "message", "subtype": "message_deleted", "channel": CHANNEL,
                "channel_type": "channel", "deleted_ts": ts(5), "hidden": True,
                "ts": ts(401), "event_ts": ts(401),
                "previous_message": {"type": "message", "ts": ts(5)},
            }
        )  # fmt: skip
        assert ts(5) not in [row[0] for row in ranked(restarted, "escalation policy")]


def test_an_answer_during_a_build_finds_an_old_fact_not_yet_indexed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store_fact_among_notes(tmp_path, "the pager rotation moves to Lee", 300)
    with stored(tmp_path) as record:
        restarted = restarted_engine(record, wait=0.0, per_channel=50)
        indexes = restarted.indexes
        assert indexes is not None
        restarted.warm_channel(CHANNEL)
        for n in range(250, 300):  # the recent window the history holds
            restarted.learn_messages([Message(channel=CHANNEL, ts=ts(n), text=f"routine {n}")])
        with caplog.at_level(logging.INFO, "chanctx.store_index"), indexes._builder:
            # A build of another channel holds the builder: this one cannot start yet.
            during = ranked(restarted, "pager rotation")
            assert indexes.indexed(CHANNEL) == 0
            recent = ranked(restarted, "routine 280")
            deleted_meanwhile = {
                "type": "message", "subtype": "message_deleted", "channel": CHANNEL,
                "channel_type": "channel", "deleted_ts": ts(0), "hidden": True,
                "ts": ts(401), "event_ts": ts(401),
                "previous_message": {"type": "message", "ts": ts(0)},
            }  # fmt: skip
            restarted.handle(deleted_meanwhile)
            after_deletion = ranked(restarted, "pager rotation")
        # The old message is neither held nor indexed yet: the store's full-text index found it.
        assert during[0][0] == ts(0)
        assert recent[0][0] == ts(280)
        assert ts(0) not in [row[0] for row in after_deletion]
        assert "still being built" in caplog.text and "50 messages held" in caplog.text
        deadline = time.monotonic() + 60
        while not indexes.indexed(CHANNEL):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert ts(0) not in [row[0] for row in ranked(restarted, "pager rotation")]
        assert ranked(restarted, "routine 280")[0][0] == ts(280)


def test_the_interim_index_ranks_its_messages_as_a_built_index_would(tmp_path: Path) -> None:
    """A channel that fits in the history: the interim index (during a build) and the built
    one hold the same messages, so they rank alike."""
    with stored(tmp_path) as record:
        writer = engine(record)
        for n in range(40):
            words = " ".join(WORDS[(n * k) % len(WORDS)] for k in (1, 3, 5))
            writer.handle(message(ts(n), f"{words} {n}", user=("U1", "U2", "U3")[n % 3]))
    with stored(tmp_path) as record:
        restarted = restarted_engine(record, wait=0.0)
        indexes = restarted.indexes
        assert indexes is not None
        restarted.warm_channel(CHANNEL)
        restarted.learn_messages(record.store.messages(TEAM, CHANNEL))  # the history holds all
        with indexes._builder:
            during = {intent: ranked(restarted, intent) for intent in INTENTS}
            assert indexes.indexed(CHANNEL) == 0
        deadline = time.monotonic() + 60
        while not indexes.indexed(CHANNEL):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for intent in INTENTS:
            assert ranked(restarted, intent) == during[intent], intent


def test_the_least_recently_searched_channel_drops_its_index_first(tmp_path: Path) -> None:
    channels = (CHANNEL, "C0OTHER001", "C0OTHER002")
    with stored(tmp_path) as record:
        writer = engine(record)
        for channel in channels:
            writer.handle(message(ts(0), f"the secret of {channel} is plum", channel=channel))
            for n in range(1, 400):
                writer.handle(message(ts(n), f"routine note {n}", channel=channel))
    with stored(tmp_path) as record:
        restarted = engine(record, per_channel=10, mb=1)  # about two channels' indexes fit
        indexes = restarted.indexes
        assert indexes is not None

        def search(channel: str) -> list[tuple[Any, ...]]:
            tools = ChannelTools(EngineView(restarted, channel), names=NAMES)
            out = tools.call("channel_context", {"intent": "what is the secret?"})
            return [tuple(row) for row in json.loads(out.content)["results"]]

        for channel in channels:
            assert search(channel)[0][0] == ts(0)
        assert indexes.indexed(channels[0]) == 0  # the first searched went
        assert all(indexes.indexed(c) == 400 for c in channels[1:])
        assert search(CHANNEL)[0][0] == ts(0)  # built again on its next search
        assert indexes.indexed(CHANNEL) == 400


@pytest.mark.slow  # waits out a build's 1 s wait on purpose
def test_answers_during_a_build_stop_waiting_for_it_once_its_wait_has_passed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with stored(tmp_path) as record:
        writer = engine(record)
        for n in range(20):
            writer.handle(message(ts(n), f"routine note {n}", user="U2"))
    with stored(tmp_path) as record:
        restarted = restarted_engine(record, wait=30.0, per_channel=50)
        indexes = restarted.indexes
        assert indexes is not None
        with caplog.at_level(logging.INFO, "chanctx.store_index"), indexes._builder:
            # Another channel's build holds the builder: this channel's cannot end yet.
            ranked(restarted, "routine note")
            first = caplog.text
            caplog.clear()
            ranked(restarted, "routine note")
            second = caplog.text
        deadline = time.monotonic() + 60  # the build ends before the store closes
        while not indexes.indexed(CHANNEL):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    # The first answer waited for the build (up to BUILD_WAIT from its start); the second
    # came after that and did not wait again.
    assert "still being built" in first and "waited 0.0 s" not in first
    assert "still being built" in second and "waited 0.0 s" in second
