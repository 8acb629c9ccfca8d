"""An imported channel is held: the store knows the range its export covered, a start reads
that range from the store, and only what Slack holds since the export's newest message (the
gap) is read from Slack, by the first load and the backfill, never the imported range again.
Against the fake Slack over real loopback HTTP."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

from chanctx.bot.core.backfill_plan import GAP, HISTORY, imported_cursor, loaded_cursors
from chanctx.bot.export.importer import import_export
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replay.offline import OfflineBot
from chanctx.cache import ts_key
from chanctx.cache.channel_store import BackfillCursor, SqliteChannelStore
from hypothesis import given
from hypothesis import strategies as st

from tests.support.backfill_channel import backfill_on, backfill_state, missing_from_store, run
from tests.support.slack_events import CHANNEL, STATE, TEAM, mention_pair, ts
from tests.support.slack_exports import write_folder

EXPORTED = {ts(1): "the vault code moved to Zürich", ts(2): "checkout-api 502 after v41"}
GAP_TEXTS = {ts(10): "rolled back v41, ça marche", ts(11): "postmortem on Friday"}


def export_of(messages: list[dict[str, Any]], root: Path) -> Path:
    """``messages`` (Slack's history items) as an export of CHANNEL, one day file."""
    users = [dict(u, team_id=TEAM) for u in STATE["users"].values()]
    files = {
        "users.json": json.dumps(users).encode(),
        "channels.json": json.dumps([{"id": CHANNEL, "name": "general"}]).encode(),
        "general/2026-06-09.json": json.dumps(messages, ensure_ascii=False).encode(),
    }
    return write_folder(files, root)


def imported(data: Path, export: Path) -> None:
    with SqliteChannelStore(data) as store:
        summary = import_export(export, store)
    assert summary.refused == 0 and summary.imported > 0


def history_calls(fake: FakeSlackAPI) -> list[dict[str, Any]]:
    return [c.params for c in fake.calls if c.method == "conversations.history"]


def test_a_start_reads_the_import_from_the_store_and_slack_only_for_what_is_newer(
    tmp_path: Path,
) -> None:
    plain = [{"type": "message", "user": "U2", "ts": t, "text": x} for t, x in EXPORTED.items()]
    gap = [{"type": "message", "user": "U1", "ts": t, "text": x} for t, x in GAP_TEXTS.items()]
    imported(tmp_path / "data", export_of(plain, tmp_path / "export"))
    state = copy.deepcopy(STATE)
    state["history"] = {CHANNEL: plain + gap}  # Slack holds both; the store the export only

    with OfflineBot(state, data_dir=tmp_path / "data", channel_store=True) as bot:
        for event in mention_pair(ts(20), "where did the vault code move?"):
            bot.dispatch(event)
        (result,) = bot.runtime.runner.results
        calls = history_calls(bot.slack)
    # One read, of the gap alone: nothing at or before the export's newest message.
    assert [c.get("oldest") for c in calls] == [ts(2)]
    shown = repr(result.context.snapshot)
    assert all(text in shown for text in [*EXPORTED.values(), *GAP_TEXTS.values()])
    with SqliteChannelStore(tmp_path / "data", read_only=True) as store:
        cursor = store.cursor(TEAM, CHANNEL, HISTORY)
        assert cursor is not None and (cursor.oldest_ts, cursor.newest_ts) == (ts(1), None)
        assert {m.ts for m in store.messages(TEAM, CHANNEL)} >= {*EXPORTED, *GAP_TEXTS}

    # Held up to now: the next start asks Slack for no history at all.
    with OfflineBot(state, data_dir=tmp_path / "data", channel_store=True) as bot:
        for event in mention_pair(ts(30), "and the postmortem?"):
            bot.dispatch(event)
        assert history_calls(bot.slack) == []


def slack_messages(state: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(state["history"][CHANNEL], key=lambda m: ts_key(m["ts"]))


def test_a_gap_larger_than_a_page_is_backfilled_without_reading_the_import_again(
    tmp_path: Path,
) -> None:
    """100 messages with threads; the export holds the oldest 60. Pages of 15 (the limited
    tier): the first load reads the gap's newest page, the backfill the rest down to the
    export, then the pass goes on below the export's oldest message only."""
    state = backfill_state(100, threads=10, replies=2)
    every = slack_messages(state)
    roots = [m for m in every if m.get("thread_ts") in (None, m["ts"])]
    cut = roots[59]["ts"]  # the export's newest top-level message
    exported = [m for m in every if ts_key(m["ts"]) <= ts_key(cut)]
    imported(tmp_path, export_of(exported, tmp_path / "export"))
    with SqliteChannelStore(tmp_path) as store:
        newest = store.cursor(TEAM, CHANNEL, HISTORY)
        assert newest is not None and newest.newest_ts == cut

    with FakeSlackAPI(state, tier="limited", minute_seconds=0.05) as fake:
        backfill, opened = backfill_on(tmp_path, fake, first_load=True)
        try:
            run(backfill, pages=1)  # one page of the gap stored, then a restart
        finally:
            opened.close()
        backfill, opened = backfill_on(tmp_path, fake)
        try:
            run(backfill)
            assert missing_from_store(opened.store, state) == (set(), set())
            cursor = opened.store.cursor(TEAM, CHANNEL, HISTORY)
            assert cursor is not None and cursor.newest_ts is None and cursor.complete
            assert opened.store.cursor(TEAM, CHANNEL, GAP) is not None
        finally:
            opened.close()
    oldest = exported[0]["ts"]
    for call in history_calls(fake):
        above = call.get("oldest") is not None and ts_key(call["oldest"]) >= ts_key(cut)
        below = call.get("latest") is not None and ts_key(call["latest"]) <= ts_key(oldest)
        assert above or below, call  # never a page of what the export held
    # The export's threads came with it: only the gap's threads were asked for.
    asked = {c.params["ts"] for c in fake.calls if c.method == "conversations.replies"}
    assert asked and all(ts_key(root) > ts_key(cut) for root in asked)


def test_importing_the_same_export_again_leaves_its_cursor(
    tmp_path: Path,
) -> None:
    plain = [{"type": "message", "user": "U2", "ts": t, "text": x} for t, x in EXPORTED.items()]
    export = export_of(plain, tmp_path / "export")
    imported(tmp_path / "data", export)
    with SqliteChannelStore(tmp_path / "data") as store:
        first = store.cursor(TEAM, CHANNEL, HISTORY)
        import_export(export, store)
        assert store.cursor(TEAM, CHANNEL, HISTORY) == first


def cursor_ts(seconds: int) -> str:
    return f"{1_700_000_000 + seconds}.000100"


spans = st.tuples(st.integers(0, 1000), st.integers(0, 1000)).map(sorted)


@given(held=st.one_of(st.none(), st.tuples(spans, st.booleans())), export=spans)
def test_an_import_never_claims_more_than_was_held_or_imported(
    held: tuple[list[int], bool] | None, export: list[int]
) -> None:
    """Whatever the store held, the cursor an import leaves covers only what the held range
    and the export covered, and keeps the held range's top (up to now stays up to now)."""
    before = None
    if held is not None:
        (low, high), live = held
        newest = None if live else cursor_ts(high)
        before = BackfillCursor(oldest_ts=cursor_ts(low), newest_ts=newest, updated=1.0)
    after = imported_cursor(before, cursor_ts(export[0]), cursor_ts(export[1]), 2.0)
    if after is None:
        return
    assert after.oldest_ts is not None
    covered = [export]
    if before is not None and before.oldest_ts is not None:
        top = (
            10**9
            if before.newest_ts is None
            else int(before.newest_ts.split(".")[0]) - 1_700_000_000
        )
        covered.append([int(before.oldest_ts.split(".")[0]) - 1_700_000_000, top])
    low = int(after.oldest_ts.split(".")[0]) - 1_700_000_000
    top = 10**9 if after.newest_ts is None else int(after.newest_ts.split(".")[0]) - 1_700_000_000
    # Every point of the claimed range lies in the held range or the export.
    points = {low, top, *[p for span in covered for p in span]}
    for point in points:
        if low <= point <= top:
            assert any(a <= point <= b for a, b in covered), (before, export, after)
    if before is not None and before.newest_ts is None:
        assert after.newest_ts is None


def test_a_first_load_closes_the_gap_when_it_reaches_the_import() -> None:
    held = BackfillCursor(oldest_ts=cursor_ts(1), newest_ts=cursor_ts(50), updated=1.0)
    closed = loaded_cursors(held, None, cursor_ts(60), False, 2.0)
    assert closed[HISTORY].newest_ts is None and closed[HISTORY].oldest_ts == cursor_ts(1)
    reached = loaded_cursors(held, None, cursor_ts(40), True, 2.0)
    assert reached[HISTORY].newest_ts is None
    partly = loaded_cursors(held, None, cursor_ts(70), True, 2.0)
    assert set(partly) == {GAP} and partly[GAP].oldest_ts == cursor_ts(70)
    further = BackfillCursor(oldest_ts=cursor_ts(60), goal_ts=cursor_ts(50))
    assert loaded_cursors(held, further, cursor_ts(70), True, 2.0) == {}
    live = BackfillCursor(oldest_ts=cursor_ts(1), updated=time.time())
    assert loaded_cursors(live, None, cursor_ts(70), True, 2.0) == {}
