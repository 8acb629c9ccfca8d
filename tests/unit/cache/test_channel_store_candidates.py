"""``search_candidates`` when a term is common (more matches than ``_fts_search.CAP``): the
rare terms' matches come whole and first, the common ones' newest fill in, only the channel's
live messages come back, and a small query is still ranked by FTS5's bm25()."""

from __future__ import annotations

from pathlib import Path

from chanctx.cache.channel_store import MessageDeleted, MessagePosted, SqliteChannelStore
from chanctx.cache.channel_store._fts_search import CAP, SCORED
from chanctx.context import Message

T = "T1"
BASE = 1_700_000_000
MANY = CAP + 300  # messages holding the common word


def ts(second: int) -> str:
    return f"{BASE + second}.000000"


def post(second: int, text: str, channel: str = "C1") -> MessagePosted:
    return MessagePosted(T, Message(channel=channel, ts=ts(second), user_id="U1", text=text))


def busy_store(path: Path) -> SqliteChannelStore:
    """MANY messages with "deploy"; three old ones also say "zanzibar"; a neighbour channel
    says both words."""
    store = SqliteChannelStore(path)
    events = [post(n, f"deploy number {n} went out") for n in range(MANY)]
    for n in (5, 17, 40):
        events[n] = post(n, f"deploy to zanzibar {n} failed")
    events += [post(n, "deploy zanzibar here too", channel="C2") for n in range(MANY, MANY + 5)]
    store.write(events)
    return store


def test_rare_matches_come_whole_and_first_then_the_newest_common_ones(tmp_path: Path) -> None:
    store = busy_store(tmp_path)
    found = store.search_candidates(T, "C1", ["deploy", "zanzibar"], 10)
    assert [c.ts for c in found[:3]] == [ts(40), ts(17), ts(5)]  # both words, newest first
    assert [c.ts for c in found[3:]] == [ts(n) for n in range(MANY - 1, MANY - 8, -1)]
    assert all(c.score > 0 for c in found)
    assert found[0].score > found[3].score  # a rare word weighs more than a common one
    # A common word alone: its newest matches, the channel's own.
    alone = store.search_candidates(T, "C1", ["deploy"], 4)
    assert [c.ts for c in alone] == [ts(n) for n in range(MANY - 1, MANY - 5, -1)]
    store.close()


def test_a_deleted_message_is_never_a_candidate_on_either_path(tmp_path: Path) -> None:
    store = busy_store(tmp_path)
    store.write([MessageDeleted(T, "C1", ts(17)), MessageDeleted(T, "C1", ts(MANY - 1))])
    busy = [c.ts for c in store.search_candidates(T, "C1", ["deploy", "zanzibar"], 10)]
    assert ts(17) not in busy and ts(MANY - 1) not in busy
    assert busy[:2] == [ts(40), ts(5)] and busy[2] == ts(MANY - 2)
    small = [c.ts for c in store.search_candidates(T, "C1", ["zanzibar"], 10)]
    assert small == [ts(40), ts(5)] or small == [ts(5), ts(40)]
    store.close()


def test_few_matches_are_ranked_by_bm25_best_first(tmp_path: Path) -> None:
    store = SqliteChannelStore(tmp_path)
    store.write([post(n, "lunch menu today") for n in range(SCORED // 2)])
    store.write([post(1_000, "incident incident incident postmortem"), post(1_001, "incident")])
    found = store.search_candidates(T, "C1", ["incident", "postmortem"], 2)
    assert [c.ts for c in found] == [ts(1_000), ts(1_001)]
    assert found[0].score > found[1].score > 0
    store.close()
