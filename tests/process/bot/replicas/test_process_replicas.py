"""Two `chanctx run --http` replicas on one real redis-server, Slack's events spread over them
round-robin and Slack's retries sent to the other replica (some at the same moment): every
mention is answered exactly once, and Claude gets, turn for turn, the very requests one process
sends for the same stream, with no more Slack reads than one process makes."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.redis_server import redis_server
from tests.support.replica_processes import (
    answered,
    parts_posted,
    replica,
    replica_status,
    request_bodies,
    start_all,
    wait_for,
)
from tests.support.slack_events import (
    CHANNEL,
    STATE,
    edit,
    envelope,
    mention_pair,
    message,
    reaction,
    ts,
)

READS = ("conversations.history", "conversations.replies", "users.info", "conversations.info")
Step = tuple[list[dict[str, Any]], str | None]  # envelopes, and the turn they ask (or None)


def conversation() -> list[Step]:
    """A channel's afternoon: messages, a reaction, an edit, a deletion, threads, and six
    questions (three in one thread, so its session moves between replicas)."""
    steps: list[Step] = []

    def say(*events: dict[str, Any]) -> None:
        steps.append(([envelope(e) for e in events], None))

    def ask(at: str, text: str, **extra: Any) -> None:
        steps.append((mention_pair(at, text, **extra), f"{CHANNEL}:{at}"))

    first = message(ts(10), "deploy 412 is rolling out to the canary now", user="U2")
    say(
        message(ts(0), "morning! payments p99 looks high since 9:40"),
        first,
        message(ts(20), "I see 502s from the gateway in eu-west", user="U2"),
        message(ts(30), "rolling back 412 would take ten minutes"),
        reaction(ts(31), ts(20), "eyes"),
        edit(ts(32), first, "deploy 412 is rolling out to the canary now (db migration 87)"),
    )
    ask(ts(60), "what do we know about the 502s so far?")
    say(
        message(ts(70), "the migration locks the ledger table", user="U2", thread_ts=ts(60)),
        message(ts(75), "that matches the p99 spike", thread_ts=ts(60)),
    )
    ask(ts(80), "so should we roll back 412?", thread_ts=ts(60))
    say(
        message(ts(90), "rollback started", user="U2"),
        deletion(ts(91), ts(30)),
        message(ts(100), "p99 back to 180 ms"),
        message(ts(110), "gateway 502s are gone", user="U2", thread_ts=ts(10)),
    )
    ask(ts(120), "summarize the incident for the status page", user="U2")
    say(message(ts(125), "postmortem owner: Ana", thread_ts=ts(10)))
    ask(ts(130), "who owns the postmortem?", thread_ts=ts(10))
    ask(ts(140), "and what was the root cause in the end?", thread_ts=ts(60))
    ask(ts(150), "anything still open?")
    return steps


def deletion(at: str, deleted: str) -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "message_deleted",
        "channel": CHANNEL,
        "deleted_ts": deleted,
        "ts": at,
        "hidden": True,
    }


def _deliver(urls: list[str], env: dict[str, Any], n: int) -> None:
    """Delivery ``n``: to one replica in turn; every third also retried to the next one, at
    the same moment (Slack retries after 3 s without an answer, wherever it lands)."""
    statuses: list[int | None] = []
    target, other = urls[n % len(urls)], urls[(n + 1) % len(urls)]
    if n % 3:
        statuses.append(post_signed(target, env))
    else:
        sends: list[Callable[[], int | None]] = [
            lambda: post_signed(target, env),
            lambda: post_signed(other, env, retry=1),
        ]
        threads = [threading.Thread(target=lambda f=f: statuses.append(f())) for f in sends]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert statuses and all(s == 200 for s in statuses), statuses


def _run(workdir: Path, redis_url: str | None, replicas: int) -> dict[str, Any]:
    """The conversation through ``replicas`` processes; what Claude and Slack saw."""
    with (
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI() as claude,
    ):
        bots: list[BotProcess] = [
            replica(workdir / f"r{i}", slack.url, claude.url, redis_url) for i in range(replicas)
        ]
        try:
            start_all(bots)
            urls = [bot.url for bot in bots]
            n = 0
            asked: list[str] = []
            for envelopes, turn in conversation():
                for env in envelopes:
                    slack.mirror_event(env["event"])  # Slack has what it sent
                    _deliver(urls, env, n)
                    n += 1
                if turn is not None:
                    asked.append(turn)
                    # One question at a time: its context is then the same in every run.
                    wait_for(lambda t=turn: t in answered(slack, CHANNEL), 60, f"{turn} answered")
            time.sleep(1.0)  # would a duplicate still arrive?
            statuses = [replica_status(bot) for bot in bots]
        finally:
            for bot in bots:
                bot.stop()
        posted = parts_posted(slack, CHANNEL)
        return {
            "asked": asked,
            "posted": posted,
            "texts": {
                str((m.get("metadata") or {}).get("event_payload", {}).get("turn")): m["text"]
                for m in slack.messages(CHANNEL)
                if m.get("metadata")
            },
            "requests": request_bodies(claude.requests),
            "reads": {m: slack.call_counts().get(m, 0) for m in READS},
            "statuses": statuses,
        }


def test_two_replicas_answer_each_mention_once_with_one_processs_context(tmp_path: Path) -> None:
    one = _run(tmp_path / "single", None, 1)
    with redis_server(tmp_path / "redis") as server:
        two = _run(tmp_path / "replicas", server.url, 2)
    assert len(two["asked"]) == 6
    assert set(two["posted"]) == {(turn, 0) for turn in two["asked"]}  # every one answered
    assert max(two["posted"].values()) == 1, two["posted"]  # none twice
    assert two["texts"] == one["texts"]
    assert len(two["requests"]) == len(one["requests"]) >= 6
    for number, (mine, reference) in enumerate(zip(two["requests"], one["requests"], strict=True)):
        assert mine == reference, f"Messages API request {number} differs"
    assert two["reads"] == one["reads"]  # no replica asked Slack what another had learned
    taken = [s.get("turns_taken", 0) for s in two["statuses"]]
    assert all(taken) and sum(taken) == 6, two["statuses"]  # both replicas answered
