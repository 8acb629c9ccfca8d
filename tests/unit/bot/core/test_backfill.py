"""The background backfill against the fake Slack (real loopback HTTP) under the limited tier,
with the fake's minute shortened to 0.05 s (and the bot's limiter told the same): pages go to
the store with their cursor, threads' replies are read, a restart resumes from the stored
cursor, and a finished pass is not run again."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from chanctx.bot.core.backfill_plan import HISTORY, BackfillSettings, goal_ts, pending
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import BackfillCursor

from tests.support.backfill_channel import (
    MINUTE,
    answer_load,
    backfill_on,
    backfill_state,
    missing_from_store,
    run,
    served,
)
from tests.support.slack_events import CHANNEL, TEAM


def reads(fake: FakeSlackAPI) -> dict[str, int]:
    """History and replies calls: a start lists its channels (users.conversations) anyway."""
    counts = fake.call_counts()
    return {m: counts.get(m, 0) for m in ("conversations.history", "conversations.replies")}


def test_a_channel_is_backfilled_whole_with_its_threads(tmp_path: Path) -> None:
    state = backfill_state(100, threads=4, replies=20)
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        backfill, opened = backfill_on(tmp_path, fake)
        try:
            run(backfill)
            missing, extra = missing_from_store(opened.store, state)
            assert (missing, extra) == (set(), set())
            cursor = opened.store.cursor(TEAM, CHANNEL, HISTORY)
            assert cursor is not None and cursor.complete
            # 100 messages in pages of 15; 4 threads of 20 replies, two pages each.
            assert served(fake, "conversations.history") == 7
            assert served(fake, "conversations.replies") == 8
            assert not [f for f in fake.failures if f[1] != 429]
        finally:
            opened.close()


def test_a_restart_resumes_from_the_stored_cursor_and_a_finished_pass_is_not_repeated(
    tmp_path: Path,
) -> None:
    state = backfill_state(150, threads=3, replies=4)
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        backfill, opened = backfill_on(tmp_path, fake)
        run(backfill, pages=4)
        stored_pages = backfill.pages
        cursor = opened.store.cursor(TEAM, CHANNEL, HISTORY)
        assert cursor is not None and not cursor.complete
        opened.close()  # the process ends with a page in flight at most
        first = served(fake, "conversations.history")

        backfill, opened = backfill_on(tmp_path, fake)
        try:
            run(backfill)
            missing, extra = missing_from_store(opened.store, state)
            assert (missing, extra) == (set(), set())
            total = served(fake, "conversations.history")
            # Ten pages of 15 in all; the restart asked again for at most the page in flight.
            assert stored_pages == 4 and first - stored_pages <= 1
            assert total - first == 10 - stored_pages
        finally:
            opened.close()

        backfill, opened = backfill_on(tmp_path, fake)
        try:
            before = reads(fake)
            backfill.step()
            assert reads(fake) == before  # the pass is recorded as done
        finally:
            opened.close()


def test_recent_stops_at_its_goal_and_a_later_start_finds_nothing_to_do(tmp_path: Path) -> None:
    # 60 messages an hour apart, 3 per... a day of 24: "the last 1 day" wants the newest 24ish.
    state = backfill_state(60, spacing=3600.0)
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        backfill, opened = backfill_on(tmp_path, fake, mode="recent", days=1)
        try:
            run(backfill)
            day_ago = time.time() - 86_400
            missing, _ = missing_from_store(opened.store, state, oldest=day_ago + 120)
            assert missing == set()
            older = [m for m in opened.store.messages(TEAM, CHANNEL) if float(m.ts) < day_ago - 120]
            assert older == []
            cursor = opened.store.cursor(TEAM, CHANNEL, HISTORY)
            assert cursor is not None and not cursor.complete and cursor.goal_ts is not None
        finally:
            opened.close()
        backfill, opened = backfill_on(tmp_path, fake, mode="recent", days=1)
        try:
            before = reads(fake)
            backfill.step()
            assert reads(fake) == before
        finally:
            opened.close()


def test_what_is_pending() -> None:
    settings = BackfillSettings(mode="recent", days=30)
    goal = goal_ts(settings, 100 * 86_400.0)
    assert goal == f"{70 * 86_400.0:.6f}"
    assert goal_ts(BackfillSettings(mode="all"), 5.0) is None
    assert pending(None, goal)
    assert not pending(BackfillCursor(oldest_ts="1.000000", complete=True), None)
    assert pending(BackfillCursor(oldest_ts=f"{80 * 86_400.0:.6f}"), goal)
    assert not pending(BackfillCursor(oldest_ts=goal, goal_ts=goal), goal)
    # A later day's goal is newer: a recent pass already done stays done.
    assert not pending(BackfillCursor(oldest_ts=goal, goal_ts=goal), f"{71 * 86_400.0:.6f}")
    # Switching to all: the pass goes on from where recent stopped.
    assert pending(BackfillCursor(oldest_ts=goal, goal_ts=goal), None)


def test_threads_of_the_page_an_answer_loaded_are_read_too(tmp_path: Path) -> None:
    """The newest page comes from the engine's first load, which reads no replies: its
    threads are read by the backfill all the same."""
    state = backfill_state(40, threads=4, replies=3)  # threads at 0, 10, 20, 30: 30 is newest
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        backfill, opened = backfill_on(tmp_path, fake, first_load=True)
        try:
            run(backfill)
            missing, extra = missing_from_store(opened.store, state)
            assert (missing, extra) == (set(), set())
        finally:
            opened.close()


def test_threads_of_a_page_an_answer_loaded_after_the_backfill_began_are_read_too(
    tmp_path: Path,
) -> None:
    """A channel listed by users.conversations is taken up before any event of it: when an
    answer's first load stores its newest page after the backfill looked for one (and found
    none), that page's threads are still read (the benchmark found one thread missing)."""
    state = backfill_state(40, threads=4, replies=3)  # threads at 0, 10, 20, 30: 30 is newest
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        backfill, opened = backfill_on(tmp_path, fake, first_load=True)
        try:
            backfill.step()  # listed, and its first step finds no page loaded yet
            answer_load(opened, fake)
            run(backfill)
            missing, extra = missing_from_store(opened.store, state)
            assert (missing, extra) == (set(), set())
        finally:
            opened.close()


def test_a_long_backfill_says_in_the_log_how_far_it_got(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Under the limited tier a pass lasts hours: the log tells its progress as it goes."""
    state = backfill_state(45)
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        backfill, opened = backfill_on(tmp_path, fake, progress=0.0)
        try:
            with caplog.at_level(logging.INFO, logger="chanctx"):
                run(backfill)
        finally:
            opened.close()
    told = [r.getMessage() for r in caplog.records if r.getMessage().startswith("backfill: ")]
    # 45 messages in pages of 15: a line after each page, counting up.
    assert [line.split(",")[0] for line in told] == [
        "backfill: 1 pages", "backfill: 2 pages", "backfill: 3 pages",
    ]  # fmt: skip
    assert f"{CHANNEL} back to ts" in told[-1]


def test_the_channels_the_bot_is_in_are_listed_and_backfilled_even_if_never_heard(
    tmp_path: Path,
) -> None:
    """users.conversations names the channels to backfill: one the store never saw is paged
    too; one the bot is not in (Slack would refuse its history) is not asked for."""
    state = backfill_state(30)
    quiet, outside = "C0QUIET001", "C0OUTSIDE1"
    state["history"][quiet] = backfill_state(20, channel=quiet)["history"][quiet]
    state["history"][outside] = backfill_state(5, channel=outside)["history"][outside]
    state["channels"][quiet] = {"id": quiet, "name": "quiet", "is_private": True}
    state["channels"][outside] = {"id": outside, "name": "outside", "is_member": False}
    with FakeSlackAPI(state, tier="limited", minute_seconds=MINUTE) as fake:
        loaded: list[str] = []
        backfill, opened = backfill_on(tmp_path, fake, first_load=True, loads=loaded)
        try:
            run(backfill)
            assert missing_from_store(opened.store, state, channel=quiet) == (set(), set())
            assert opened.store.messages(TEAM, outside) == []
            # A channel never loaded, heard or not, gets its newest page from the engine's
            # first load, so an answer's load and the backfill's never both ask for it.
            assert set(loaded) == {CHANNEL, quiet}
        finally:
            opened.close()
    asked = {c.params.get("channel") for c in fake.calls if c.method == "conversations.history"}
    assert asked == {CHANNEL, quiet}
    assert served(fake, "users.conversations") == 1  # one page lists them all


def test_users_conversations_is_paged_as_slack_pages_it(tmp_path: Path) -> None:
    state = backfill_state(1)
    for n in range(5):
        state["channels"][f"C0LISTED{n:02d}"] = {"id": f"C0LISTED{n:02d}", "name": f"c{n}"}
    state["channels"]["D0DIRECT01"] = {"id": "D0DIRECT01", "name": "", "is_im": True}
    state["channels"]["C0ARCHIVE1"] = {"id": "C0ARCHIVE1", "name": "old", "is_archived": True}
    with FakeSlackAPI(state) as fake:
        backfill, opened = backfill_on(tmp_path, fake)
        try:
            fetcher = backfill.slack
            listed: list[str] = []
            cursor = ""
            while True:
                got = fetcher.member_channels(cursor, limit=2)
                assert got is not None
                page, cursor = got
                assert len(page) <= 2
                listed += page
                if not cursor:
                    break
        finally:
            opened.close()
    # The channels the bot is in (not its DMs: they began with it), archived ones left out.
    assert sorted(listed) == sorted([CHANNEL, *(f"C0LISTED{n:02d}" for n in range(5))])
