"""The playbook shared by replicas on a real redis-server: what one replica learns, another
sends; votes through either count once; concurrent writers never lose a delta; a rewrite by
one replica is picked up by the others; the reaction feedback rules match the local store's."""

from __future__ import annotations

import threading

import redis
from chanctx.context.playbook import BulletSource, Delta
from chanctx.manifest_store import RedisFeedbackStore, RedisPlaybookStore

from tests.support import redis_server as shared

server, client = shared.server, shared.client  # the module's redis-server and a client of it

TEAM, CHANNEL = "T0REDIS001", "C0OPSTEAM1"


def fact(n: int, text: str | None = None, subject: str | None = None) -> Delta:
    return Delta(op="ADD", section="runbooks", subject=subject,
                 content=text or f"svc{n} alpha{n} beta{n} gamma{n} needs payctl.",
                 sources=(BulletSource(turn=f"{CHANNEL}:{n}"),))  # fmt: skip


def test_what_one_replica_learns_the_other_sends(client: redis.Redis) -> None:
    one, two = RedisPlaybookStore(client, TEAM), RedisPlaybookStore(client, TEAM)
    one.apply(CHANNEL, [fact(1), fact(2)], now=1.0)
    assert [b.id for b in two.bullets(CHANNEL)] == ["runbooks-00001", "runbooks-00002"]
    # A use recorded by one replica, a vote through the other: counted once, however often.
    one.record_use(CHANNEL, f"{CHANNEL}:9", ["runbooks-00001"])
    assert two.vote(CHANNEL, f"{CHANNEL}:9", "U1", helpful=True, now=2.0) == ["runbooks-00001"]
    assert one.vote(CHANNEL, f"{CHANNEL}:9", "U1", helpful=True, now=3.0) == []
    assert {b.id: b.state for b in one.bullets(CHANNEL)}["runbooks-00001"] == "verified"
    # A newer statement through one replica supersedes what the other added.
    two.apply(CHANNEL, [fact(3, "Kim owns payctl now.", subject="owner:payctl")], now=4.0)
    one.apply(CHANNEL, [fact(4, "Sam took over payctl from Kim.", subject="owner:payctl")], 5.0)
    states = {b.content: b.state for b in two.bullets(CHANNEL)}
    assert states["Kim owns payctl now."] == "superseded"
    assert one.channels() == [CHANNEL]


def test_concurrent_writers_on_two_replicas_lose_no_delta(client: redis.Redis) -> None:
    replicas = [RedisPlaybookStore(client, TEAM) for _ in range(2)]

    def write(store: RedisPlaybookStore, start: int) -> None:
        for n in range(start, start + 40):
            store.apply(CHANNEL, [fact(n)], now=float(n))

    threads = [threading.Thread(target=write, args=(r, i * 1000)) for i, r in enumerate(replicas)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    fresh = RedisPlaybookStore(client, TEAM)
    bullets = fresh.bullets(CHANNEL)
    assert len(bullets) == 80  # every delta, each its own id
    assert len({b.id for b in bullets}) == 80
    assert [b.id for b in replicas[0].bullets(CHANNEL)] == [b.id for b in bullets]


def test_a_rewrite_by_one_replica_is_picked_up_by_the_other(client: redis.Redis) -> None:
    one, two = RedisPlaybookStore(client, TEAM), RedisPlaybookStore(client, TEAM)
    one.apply(CHANNEL, [fact(1)], now=1.0)
    assert len(two.bullets(CHANNEL)) == 1
    one.record_use(CHANNEL, f"{CHANNEL}:5", ["runbooks-00001"])
    one.vote(CHANNEL, f"{CHANNEL}:5", "U1", helpful=True, now=2.0)
    for turn in range(1_200):  # the same fact confirmed again and again: one line each
        one.apply(CHANNEL, [fact(1)], now=10.0 + turn)
    assert client.llen(f"chanctx:{TEAM}:playbook:{CHANNEL}") < 1_100  # rewritten compactly
    assert int(client.get(f"chanctx:{TEAM}:playbook-gen:{CHANNEL}") or 0) >= 1
    (bullet,) = two.bullets(CHANNEL)
    assert bullet.helpful == 1 and bullet.confirmed == 10.0 + 1_199
    assert len(bullet.sources) == 1  # the same source, joined once
    assert two.vote(CHANNEL, f"{CHANNEL}:5", "U1", helpful=True, now=1e4) == []  # still once


def test_redis_feedback_follows_the_local_rules(client: redis.Redis) -> None:
    store = RedisFeedbackStore(client, TEAM, helpful=frozenset({"tada"}), harmful=frozenset({"x"}))
    other = RedisFeedbackStore(client, TEAM, helpful=frozenset({"tada"}), harmful=frozenset({"x"}))
    store.record_answer(CHANNEL, "1781020800.000001", f"{CHANNEL}:1781020800.000000")
    assert other.record_reaction(CHANNEL, "1781020800.000001", "U1", "+1", added=True) is None
    assert other.record_reaction(CHANNEL, "1781020800.000001", "U1", "tada", added=True)
    # A click, then the other button through the other replica: the first no longer counts.
    store.record_click(CHANNEL, "1781020800.000001", "U2", helpful=True)
    vote = other.record_click(CHANNEL, "1781020800.000001", "U2", helpful=False)
    assert vote is not None and vote.verdict == "harmful"
    assert store.tally(f"{CHANNEL}:1781020800.000000") == {"helpful": 1, "harmful": 1}
    # A block naming another channel's turn is not believed.
    assert store.record_click(CHANNEL, "1781020999.000001", "U3", helpful=True,
                              turn="C0ELSEWHERE:1781020999.000000") is None  # fmt: skip
