"""The Redis stores replicas share, against a real redis-server: the turn queue with its leases
and fencing, session logs, API profiles, Slack installations, and an outage reported as
StoreUnavailable (an OSError, so the event is refused and Slack retries)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis
from chanctx.bot.stores.installations.redis import RedisInstallationStore
from chanctx.bot.stores.pane_threads.redis import RedisPaneThreads
from chanctx.bot.stores.profiles import AgentProfile
from chanctx.bot.stores.profiles.redis import RedisProfileStore
from chanctx.manifest_store import (
    CustomEntry,
    MessageEntry,
    RedisFeedbackStore,
    RedisSessionStore,
    RedisTurnStore,
    SessionKey,
    SessionStarted,
    StoreUnavailable,
    TurnTakenOver,
)
from chanctx.manifest_store.redaction import MARKER, Redactor
from slack_sdk.oauth.installation_store import Installation

from tests.support import redis_server as shared
from tests.support.redis_server import RedisServer

server, client = shared.server, shared.client  # the module's redis-server and a client of it

TEAM = "T0REDIS001"


def _store(client: redis.Redis, name: str) -> RedisTurnStore:
    store = RedisTurnStore(client, TEAM, name)
    store.ensure_group()
    return store


def test_a_question_is_queued_once_and_handed_to_exactly_one_replica(client: redis.Redis) -> None:
    a, b = _store(client, "a"), _store(client, "b")
    payload = {"channel": "C1", "thread_ts": "1.000001", "anchor_ts": "1.000001", "user": "U1"}
    assert a.enqueue("C1:1.000001", payload, "Ev1") is True
    assert b.enqueue("C1:1.000001", payload, "Ev2") is False  # the app_mention of the same one
    got_a, got_b = a.read_new(10, 10), b.read_new(10, 10)
    assert len(got_a) + len(got_b) == 1
    taken = (got_a or got_b)[0]
    assert taken.payload == payload and taken.parts is None and not taken.taken_over
    assert a.counts() == {"queued": 1, "pending": 1}


def test_an_answer_is_written_posted_and_finished_then_remembered(client: redis.Redis) -> None:
    a = _store(client, "a")
    a.enqueue("C1:2.000001", {"channel": "C1"}, "Ev3")
    [turn] = a.read_new(1, 10)
    a.write_reply(turn.turn_id, ["part one", "part two"])
    a.write_reply(turn.turn_id, ["another answer"])  # the outbox is written once
    a.mark_posted(turn.turn_id, 0, "9.000001")
    a.finish(turn.turn_id)
    a.finish(turn.turn_id)  # finishing twice is harmless for its owner
    assert a.counts() == {"queued": 0, "pending": 0}  # acknowledged and deleted
    assert a.enqueue("C1:2.000001", {"channel": "C1"}, "Ev3") is False  # Slack's late retry
    assert 0 < client.ttl(f"chanctx:{TEAM}:turn:C1:2.000001") <= 900


def test_a_dead_replicas_turn_is_claimed_after_the_lease_with_its_outbox(
    client: redis.Redis,
) -> None:
    dead, live = _store(client, "dead"), _store(client, "live")
    dead.enqueue("C1:3.000001", {"channel": "C1"}, None)
    [turn] = dead.read_new(1, 10)
    dead.write_reply(turn.turn_id, ["the answer"])
    dead.mark_posted(turn.turn_id, 0, "9.000002")
    assert live.claim_stale(lease_ms=60_000, count=10) == []  # not idle for the lease yet
    time.sleep(0.12)
    [claimed] = live.claim_stale(lease_ms=100, count=10)
    assert claimed.taken_over and claimed.parts == ("the answer",)
    assert claimed.posted == {0: "9.000002"}
    with pytest.raises(TurnTakenOver):  # fencing: the old owner may write nothing more
        dead.mark_posted(turn.turn_id, 1, "9.000003")
    with pytest.raises(TurnTakenOver):
        dead.finish(turn.turn_id)
    live.finish(claimed.turn_id)
    assert live.counts()["pending"] == 0


def test_renewing_keeps_a_slow_answer_from_being_claimed(client: redis.Redis) -> None:
    slow, other = _store(client, "slow"), _store(client, "other")
    slow.enqueue("C1:4.000001", {"channel": "C1"}, None)
    [turn] = slow.read_new(1, 10)
    for _ in range(4):
        time.sleep(0.06)
        assert slow.renew([(turn.turn_id, turn.entry)]) == 1
        assert other.claim_stale(lease_ms=100, count=10) == []
    slow.release([(turn.turn_id, turn.entry)], lease_ms=100)  # leaving: hand it back now
    assert [t.turn_id for t in other.claim_stale(lease_ms=100, count=10)] == [turn.turn_id]
    assert slow.renew([(turn.turn_id, turn.entry)]) == 0  # no longer ours to renew


def test_one_replica_at_a_time_holds_a_thread(client: redis.Redis) -> None:
    a, b = _store(client, "a"), _store(client, "b")
    assert a.lease_thread("C1", "5.000001", 200) is True
    assert a.lease_thread("C1", "5.000001", 200) is True  # renewing its own
    assert b.lease_thread("C1", "5.000001", 200) is False
    assert b.lease_thread("C1", "6.000001", 200) is True  # another thread is free
    b.unlease_thread("C1", "5.000001")  # not b's to release
    assert b.lease_thread("C1", "5.000001", 200) is False
    a.unlease_thread("C1", "5.000001")
    assert b.lease_thread("C1", "5.000001", 200) is True


def test_a_session_resumes_on_another_replica_and_the_first_sees_it_changed(
    client: redis.Redis,
) -> None:
    key = SessionKey(TEAM, "C1", "1781020800.000100")
    here, there = RedisSessionStore(client, TEAM), RedisSessionStore(client, TEAM)
    log = here.open(key)
    assert log.entries() == []
    started = SessionStarted(
        at=1.0, session_id="s", model="m", team=TEAM, channel="C1", thread_ts=key.thread_ts
    )
    log.append(started)
    assert not log.changed_elsewhere()
    other = there.open(key)
    assert other.entries() == [started]
    note = CustomEntry(at=2.0, custom_type="chanctx:test", data={"n": 1})
    other.append(note)
    assert log.changed_elsewhere()  # the copy here is stale: reload
    assert log.entries() == [started, note] and not log.changed_elsewhere()
    client.rpush(f"chanctx:{TEAM}:session:C1:{key.thread_ts}", b"{not json")
    assert log.entries() == [started, note]  # a damaged entry is skipped, the rest kept
    assert here.keys() == [key] and here.exists(key)
    assert there.forget(key) is True and not here.exists(key) and here.keys() == []


def test_an_erased_text_leaves_every_shared_session_and_each_replica_reloads(
    client: redis.Redis,
) -> None:
    secret = "the vault code is 4417-alpha"
    key = SessionKey(TEAM, "C3", "1781020800.000300")
    here, there = RedisSessionStore(client, TEAM), RedisSessionStore(client, TEAM)
    log = here.open(key)
    log.entries()
    log.append(MessageEntry(at=1.0, role="user", content=f"context: {secret}", turn=1))
    log.append(MessageEntry(at=2.0, role="assistant", content="noted", turn=1))
    untouched = SessionKey(TEAM, "C3", "1781020800.000400")
    here.open(untouched).append(MessageEntry(at=1.0, role="user", content="hello", turn=1))
    assert not log.changed_elsewhere()

    count = there.redact(Redactor([secret]))

    assert (count.files, count.lines) == (1, 1)
    assert log.changed_elsewhere()  # same length, but rewritten: the copy here reloads
    contents = [e.content for e in log.entries() if isinstance(e, MessageEntry)]
    assert contents == [f"context: {MARKER}", "noted"]
    everything = b"".join(
        b"".join(client.lrange(name, 0, -1)) for name in client.scan_iter(f"chanctx:{TEAM}:*")
        if client.type(name) == b"list"
    )  # fmt: skip
    assert secret.encode() not in everything
    log.append(MessageEntry(at=3.0, role="user", content="next question", turn=2))
    assert len(log.entries()) == 3  # appends go on after the rewrite
    assert there.redact(Redactor([secret])).lines == 0  # nothing left to erase


def test_a_retried_append_that_had_landed_is_not_added_twice(client: redis.Redis) -> None:
    key = SessionKey(TEAM, "C2", "1781020800.000200")
    log = RedisSessionStore(client, TEAM).open(key)
    log.entries()
    entry = CustomEntry(at=3.0, custom_type="chanctx:test", data={})
    line = entry.model_dump_json()
    # The first attempt landed, then its connection broke before the answer came back.
    client.rpush(log.key, line)
    log.append(entry)  # the retry
    assert log.entries() == [entry]


def test_profiles_are_shared_by_every_replica(client: redis.Redis) -> None:
    a, b = RedisProfileStore(client, TEAM), RedisProfileStore(client, TEAM)
    profile = AgentProfile(name="triage", token_budget=900, preferred_format="json")
    assert a.put(profile) is False
    assert b.get("triage") == profile and b.all() == [profile]
    assert b.put(profile.model_copy(update={"token_budget": 1200})) is True
    assert a.get("triage").token_budget == 1200  # type: ignore[union-attr]
    assert a.delete("triage") is True and b.get("triage") is None and b.delete("triage") is False


def test_installations_are_found_by_team_and_user(client: redis.Redis) -> None:
    store = RedisInstallationStore(client)
    first = Installation(
        app_id="A1", team_id="T0INSTALL1", user_id="U1", bot_token="xoxb-first",
        bot_id="B1", bot_user_id="UB1", bot_scopes="chat:write", installed_at=1.0,
    )  # fmt: skip
    store.save(first)
    newer = Installation(
        app_id="A1", team_id="T0INSTALL1", user_id="U2", bot_token="xoxb-newer",
        bot_id="B1", bot_user_id="UB1", bot_scopes="chat:write,channels:history",
        installed_at=2.0,
    )  # fmt: skip
    store.save(newer)
    found = store.find_installation(enterprise_id=None, team_id="T0INSTALL1")
    assert found is not None and found.user_id == "U2"
    by_first = store.find_installation(enterprise_id=None, team_id="T0INSTALL1", user_id="U1")
    assert by_first is not None and by_first.bot_token == "xoxb-newer"  # the latest bot's
    bot = store.find_bot(enterprise_id=None, team_id="T0INSTALL1")
    assert bot is not None and bot.bot_scopes == ["chat:write", "channels:history"]
    assert store.find_bot(enterprise_id=None, team_id="T0OTHER001") is None
    assert set(client.keys("chanctx:T0INSTALL1:oauth:-:*")) == {
        b"chanctx:T0INSTALL1:oauth:-:bot",
        b"chanctx:T0INSTALL1:oauth:-:installer",
        b"chanctx:T0INSTALL1:oauth:-:installer:U1",
        b"chanctx:T0INSTALL1:oauth:-:installer:U2",
    }
    store.delete_installation(enterprise_id=None, team_id="T0INSTALL1", user_id="U1")
    assert store.find_installation(enterprise_id=None, team_id="T0INSTALL1", user_id="U1") is None
    store.delete_all(enterprise_id=None, team_id="T0INSTALL1")
    assert client.keys("chanctx:T0INSTALL1:*") == []
    with pytest.raises(ValueError, match="not a Slack team id"):
        store.find_bot(enterprise_id=None, team_id="T1:*")


def test_redis_down_is_an_os_error_naming_what_was_not_stored(tmp_path: Path) -> None:
    down = RedisServer(tmp_path)
    down.start()
    client = redis.Redis.from_url(down.url, socket_timeout=1, socket_connect_timeout=1)
    store = RedisTurnStore(client, TEAM, "a")
    down.stop(kill=True)
    with pytest.raises(StoreUnavailable, match="could not queue a question") as caught:
        store.enqueue("C1:7.000001", {"channel": "C1"}, "Ev9")
    assert isinstance(caught.value, OSError)
    with pytest.raises(StoreUnavailable, match="could not store a profile"):
        RedisProfileStore(client, TEAM).put(AgentProfile(name="x"))
    client.close()


def test_a_reaction_through_one_replica_counts_for_an_answer_another_posted(
    client: redis.Redis,
) -> None:
    posting, reacting = RedisFeedbackStore(client, TEAM), RedisFeedbackStore(client, TEAM)
    posting.record_answer("C1", "9.000010", "C1:8.000001")
    assert reacting.record_reaction("C1", "9.000011", "U1", "+1", added=True) is None  # not ours
    assert reacting.record_reaction("C1", "9.000010", "U1", "eyes", added=True) is None
    vote = reacting.record_reaction("C1", "9.000010", "U1", "+1::skin-tone-2", added=True)
    assert vote is not None and vote.turn == "C1:8.000001" and vote.verdict == "helpful"
    reacting.record_reaction("C1", "9.000010", "U2", "x", added=True)
    reacting.record_reaction("C1", "9.000010", "U2", "x", added=False)  # taken back
    assert posting.tally("C1:8.000001") == {"helpful": 1, "harmful": 0}


def test_the_panes_channel_is_known_to_every_replica_and_titled_once(
    client: redis.Redis,
) -> None:
    started, asked = RedisPaneThreads(client, TEAM), RedisPaneThreads(client, TEAM)
    started.save(channel_id="D1", thread_ts="9.000020", context={"channel_id": "C7"})
    started.save(channel_id="D1", thread_ts="9.000021", context={"team_id": "T1"})  # no channel
    assert asked.viewed("D1", "9.000020") == "C7"
    assert asked.viewed("D1", "9.000021") is None
    assert asked.first_question("D1", "9.000020") is True
    assert started.first_question("D1", "9.000020") is False
    started.save(channel_id="D1", thread_ts="9.000020", context={"channel_id": "C8"})
    assert asked.viewed("D1", "9.000020") == "C8"  # the user moved to another channel
