"""The quick path (bot/events/quick_intake.py) over real loopback HTTP: events no listener
answers are stored before each ack, in batches; a batch the store refuses is answered 503 and
Slack's retries of it get through; retried reactions are counted once; mentions still reach
Bolt's listeners."""

from __future__ import annotations

import copy
import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from chanctx.bot.replay.offline import OfflineBot
from chanctx.bot.server import BackgroundServer, build_asgi_app
from chanctx.manifest_store import TurnJournal
from slack_sdk.signature import SignatureVerifier

from tests.support.slack_events import CHANNEL, STATE, TEAM, envelope, mention_pair, message, ts

SECRET = "5b0c8d7e6f5a4b3c2d1e0f9a8b7c6d5e"  # a made-up signing secret for the test only


@pytest.fixture
def served() -> Iterator[tuple[OfflineBot, BackgroundServer]]:
    with (
        OfflineBot(copy.deepcopy(STATE), signing_secret=SECRET, channel_store=True) as bot,
        BackgroundServer(build_asgi_app(bot.app)) as server,
    ):
        yield bot, server


def deliver(port: int, envelopes: list[dict[str, Any]]) -> list[int]:
    """Each envelope signed and sent on one keep-alive connection; the statuses answered."""
    verifier = SignatureVerifier(SECRET)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    statuses: list[int] = []
    for sent in envelopes:
        body = json.dumps(sent)
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/json",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": str(verifier.generate_signature(timestamp=stamp, body=body)),
        }
        connection.request("POST", "/slack/events", body=body.encode(), headers=headers)
        answer = connection.getresponse()
        answer.read()
        statuses.append(answer.status)
    connection.close()
    return statuses


def reaction(target: str, user: str, *, added: bool = True) -> dict[str, Any]:
    event = {
        "type": "reaction_added" if added else "reaction_removed", "user": user,
        "reaction": "eyes", "event_ts": ts(900),
        "item": {"type": "message", "channel": CHANNEL, "ts": target},
    }  # fmt: skip
    return envelope(event)


def test_concurrent_channel_events_are_each_stored_before_their_ack(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    bot, server = served
    assert bot.channels is not None
    store = bot.channels.store
    senders = [[envelope(message(ts(s * 100 + n), f"sender {s} says {n}")) for n in range(25)]
               for s in range(6)]  # fmt: skip
    answered: dict[int, list[int]] = {}
    threads = [
        threading.Thread(target=lambda s=s: answered.__setitem__(s, deliver(server.port, senders[s])))
        for s in range(6)
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for s, statuses in answered.items():
        assert statuses == [200] * 25
        for n, sent in enumerate(senders[s]):
            stored = store.get(TEAM, CHANNEL, sent["event"]["ts"])
            assert stored is not None and stored.text == f"sender {s} says {n}"
    # Edits, deletions and reactions take the same path and land in the store and the caches.
    first, second = senders[0][0]["event"], senders[0][1]["event"]
    edited = dict(first, text="sender 0 changed it", edited={"user": "U1", "ts": ts(950)})
    change = {
        "type": "message",
        "subtype": "message_changed",
        "channel": CHANNEL,
        "channel_type": "channel",
        "message": edited,
        "ts": ts(950),
        "event_ts": ts(950),
    }
    delete = {"type": "message", "subtype": "message_deleted", "channel": CHANNEL,
              "channel_type": "channel", "deleted_ts": second["ts"], "ts": ts(951),
              "event_ts": ts(951)}  # fmt: skip
    assert deliver(server.port, [envelope(change), envelope(delete)]) == [200, 200]
    kept = store.get(TEAM, CHANNEL, first["ts"])
    assert kept is not None and kept.text == "sender 0 changed it"
    gone = store.get(TEAM, CHANNEL, second["ts"])
    assert gone is None or gone.deleted
    held = {m.ts: m for m in bot.engine.history.messages(CHANNEL)}
    assert held[first["ts"]].text == "sender 0 changed it" and second["ts"] not in held


def test_a_retried_reaction_is_dropped_by_its_event_id(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    bot, server = served
    assert bot.channels is not None
    target = ts(5)
    added, removed, other = (
        reaction(target, "U7"),
        reaction(target, "U7", added=False),
        reaction(target, "U8"),
    )
    assert deliver(server.port, [envelope(message(target, "react to me"))]) == [200]
    # Slack retries the first delivery after the removal: it must not bring the reaction back.
    assert deliver(server.port, [added, other, removed, added]) == [200] * 4
    stored = bot.channels.store.get(TEAM, CHANNEL, target)
    assert stored is not None
    assert [(r.name, r.users) for r in stored.reactions] == [("eyes", ("U8",))]


def test_a_full_store_refuses_the_events_with_503_and_slacks_retries_get_through(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    bot, server = served
    assert bot.channels is not None
    store = bot.channels.store
    db = store._db  # type: ignore[attr-defined]  # the disk, made full for the test
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    big = [envelope(message(ts(300 + n), f"{n} " + "long text " * 800)) for n in range(4)]
    liked = reaction(ts(300), "U9")
    answered: dict[int, int] = {}  # each event's status, by its place in the burst
    threads = [
        threading.Thread(target=lambda n=n, e=e: answered.update({n: deliver(server.port, [e])[0]}))
        for n, e in enumerate([*big, liked])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Every message needs room the disk lacks: refused, never stored.
    assert [answered[n] for n in range(4)] == [503] * 4
    for sent in big:
        assert store.get(TEAM, CHANNEL, sent["event"]["ts"]) is None  # refused: not stored
    # What /readyz says while the disk is full. Any write that succeeds clears it (a small
    # one may still fit: the names the burst's authors brought, on a thread of their own), so
    # it is read right after one more refusal, once the burst's side effects are done.
    late = envelope(message(ts(310), "late " + "long text " * 800))
    assert deliver(server.port, [late]) == [503]
    problem = bot.channels.problem
    assert problem is not None and "the channel store is full" in problem
    # The reaction is refused with a batch it shared with a message; alone, its target is not
    # stored yet, so it is the store's "unknown" (nothing to write) and acknowledged.
    reaction_refused = answered[4] == 503
    assert answered[4] in (200, 503)
    db.execute("PRAGMA max_page_count = 1073741823")  # room again: Slack's retries
    assert deliver(server.port, [*big, liked]) == [200] * 5
    assert bot.channels.problem is None  # a commit went through: ready again
    for sent in big:
        assert store.get(TEAM, CHANNEL, sent["event"]["ts"]) is not None
    target = store.get(TEAM, CHANNEL, ts(300))
    assert target is not None
    # A refused reaction's id was forgotten, so its retry counts; an acknowledged one's retry
    # is a duplicate and dropped.
    assert [r.users for r in target.reactions] == ([("U9",)] if reaction_refused else [])


def test_a_mention_still_goes_through_bolt_to_its_listener(
    served: tuple[OfflineBot, BackgroundServer],
) -> None:
    bot, server = served
    posted, mention = mention_pair(ts(20), "what is up?")
    assert deliver(server.port, [posted, mention]) == [200, 200]
    bot.runtime.runner.drain(10)
    journal = bot.runtime.turns
    assert isinstance(journal, TurnJournal)
    assert journal.is_done(f"{CHANNEL}:{ts(20)}")  # queued by the listener, answered
