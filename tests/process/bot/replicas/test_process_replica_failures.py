"""Replicas on one real redis-server when something dies: kill -9 of a replica with answers in
flight (the other answers them after the lease, once each), and Redis itself killed mid-stream
and started again from its append-only file (events refused while it is down, every event it
acknowledged answered once, the replicas ready again without a restart)."""

from __future__ import annotations

import copy
import signal
import time
from pathlib import Path
from typing import Any

import redis
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.redis_server import redis_server
from tests.support.replica_processes import (
    answered,
    parts_posted,
    readiness,
    replica,
    replica_status,
    start_all,
    wait_for,
    wait_ready,
)
from tests.support.slack_events import CHANNEL, STATE, TEAM, mention_pair, ts

TURNS = f"chanctx:{TEAM}:turns"


def _mentions(count: int, first: int = 0) -> list[list[dict[str, Any]]]:
    return [mention_pair(ts(10 * n), f"question {n}: what changed?") for n in range(first, count)]


def _turn(pair: list[dict[str, Any]]) -> str:
    return f"{CHANNEL}:{pair[0]['event']['ts']}"


def _pending_turns(client: redis.Redis, bot: BotProcess) -> set[str]:
    """The turns this replica holds in the consumer group (taken, not finished)."""
    assert bot.process is not None
    turns: set[str] = set()
    for consumer in client.xinfo_consumers(TURNS, "answerers"):
        name = consumer["name"].decode()
        if f"-{bot.process.pid}-" not in name:
            continue
        for row in client.xpending_range(TURNS, "answerers", "-", "+", 100, name):
            for _, fields in client.xrange(TURNS, row["message_id"], row["message_id"]):
                turns.add(fields[b"turn"].decode())
    return turns


def _exactly_once(slack: FakeSlackAPI, turns: list[str]) -> None:
    wait_for(lambda: set(turns) <= answered(slack, CHANNEL), 90, "every mention answered")
    time.sleep(1.0)  # would a duplicate still arrive?
    posted = parts_posted(slack, CHANNEL)
    assert {turn for turn, _ in posted} == set(turns)
    doubled = {key: n for key, n in posted.items() if n > 1}
    assert not doubled, f"answered more than once: {doubled}"


def test_a_killed_replicas_turns_are_answered_by_the_other_once_each(tmp_path: Path) -> None:
    with (
        redis_server(tmp_path / "redis") as server,
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI(latency_ms=1_000) as claude,  # answers in flight for a while
    ):
        lease = {"CHANCTX_TURN_LEASE": "2"}
        bots = [replica(tmp_path / f"r{i}", slack.url, claude.url, server.url, **lease)
                for i in range(2)]  # fmt: skip
        client = redis.Redis.from_url(server.url)
        try:
            start_all(bots)
            pairs = _mentions(8)
            for n, pair in enumerate(pairs):
                slack.mirror_event(pair[0]["event"])
                for envelope in pair:
                    assert post_signed(bots[n % 2].url, envelope) == 200
            victim, survivor = bots
            wait_for(lambda: len(_pending_turns(client, victim)) >= 2, 30, "turns in flight")
            in_flight = _pending_turns(client, victim)
            victim.kill()
            _exactly_once(slack, [_turn(pair) for pair in pairs])
            assert in_flight <= answered(slack, CHANNEL)  # what it held, the other answered
            claimed = replica_status(survivor)["turns_claimed"]
            assert claimed >= len(in_flight), (claimed, in_flight)
            assert survivor.process is not None and survivor.process.poll() is None
        finally:
            client.close()
            for bot in bots:
                bot.stop()


def test_redis_killed_mid_stream_refuses_events_then_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    with (
        redis_server(tmp_path / "redis", appendonly=True) as server,
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
    ):
        lease = {"CHANCTX_TURN_LEASE": "2"}
        bots = [replica(tmp_path / f"r{i}", slack.url, claude.url, server.url, **lease)
                for i in range(2)]  # fmt: skip
        pairs = _mentions(12)
        try:
            start_all(bots)
            delivered = 0

            def send(batch: list[list[dict[str, Any]]], *, retry: int = 0) -> list[int | None]:
                nonlocal delivered
                statuses = []
                for pair in batch:
                    slack.mirror_event(pair[0]["event"])
                    for envelope in pair:
                        url = bots[delivered % 2].url
                        statuses.append(post_signed(url, envelope, retry=retry))
                        delivered += 1
                return statuses

            assert send(pairs[:4]) == [200] * 8
            server.stop(kill=True)  # kill -9: no shutdown, the append-only file is all it keeps
            refused = send(pairs[4:8])
            assert all(status is not None and status >= 500 for status in refused), refused
            for bot in bots:
                wait_for(lambda b=bot: readiness(b) == 503, 10, "unready while Redis is down")
            server.start()  # the same port and directory: Redis reloads its append-only file
            for bot in bots:
                wait_ready(bot)  # by itself, without a restart
            # Slack retries what was refused, and (late acks) some that were acknowledged.
            assert send(pairs[2:8], retry=1) == [200] * 12
            assert send(pairs[8:]) == [200] * 8
            _exactly_once(slack, [_turn(pair) for pair in pairs])
            assert [bot.starts for bot in bots] == [1, 1]
        finally:
            for bot in bots:
                bot.stop()


def test_a_redis_that_comes_back_empty_is_used_again_without_a_restart(tmp_path: Path) -> None:
    """Without persistence Redis restarts empty (the README says what is lost): the replica
    makes its queue again and answers new questions."""
    with (
        redis_server(tmp_path / "redis") as server,
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bot = replica(tmp_path / "r0", slack.url, claude.url, server.url)
        try:
            start_all([bot])
            before, after = _mentions(1), _mentions(2, first=1)
            for pair in before:
                slack.mirror_event(pair[0]["event"])
                assert [post_signed(bot.url, e) for e in pair] == [200, 200]
            wait_for(lambda: _turn(before[0]) in answered(slack, CHANNEL), 30, "answered")
            server.stop(kill=True)
            wait_for(lambda: readiness(bot) == 503, 10, "unready while Redis is down")
            server.start()  # no append-only file: an empty Redis
            wait_ready(bot)
            for pair in after:
                slack.mirror_event(pair[0]["event"])
                assert [post_signed(bot.url, e) for e in pair] == [200, 200]
            _exactly_once(slack, [_turn(before[0]), _turn(after[0])])
            assert bot.starts == 1
        finally:
            bot.stop()


def test_a_stopping_replica_hands_its_running_answer_to_the_other_at_once(
    tmp_path: Path,
) -> None:
    """Zero-downtime deploys: SIGTERM with an answer in flight; the process exits, and the
    other replica takes the turn at once, not after the lease (ten minutes here)."""
    with (
        redis_server(tmp_path / "redis") as server,
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
    ):
        claude.slow_next(1, seconds=60)  # the first answer is still waiting when SIGTERM comes
        lease = {"CHANCTX_TURN_LEASE": "600"}
        stopping, staying = (
            replica(tmp_path / f"r{i}", slack.url, claude.url, server.url, **lease)
            for i in range(2)
        )
        client = redis.Redis.from_url(server.url)
        try:
            start_all([stopping])
            pair = _mentions(1)[0]
            slack.mirror_event(pair[0]["event"])
            assert [post_signed(stopping.url, e) for e in pair] == [200, 200]
            start_all([staying])
            wait_for(lambda: claude.count >= 1, 30, "the answer waiting on Claude")
            assert _pending_turns(client, stopping) == {_turn(pair)}
            assert stopping.process is not None
            stopping.process.send_signal(signal.SIGTERM)
            assert stopping.process.wait(timeout=15) == 0
            stopping.process = None
            _exactly_once(slack, [_turn(pair)])  # well within the ten-minute lease
            assert replica_status(staying)["turns_claimed"] == 1
        finally:
            client.close()
            for bot in (stopping, staying):
                bot.stop()
