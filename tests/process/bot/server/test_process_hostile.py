"""A hostile client against a real `chanctx run --http`: fuzzed bodies by family (garbage, JSON
of every shape, poisoned envelopes and mentions, non-UTF-8 bodies, non-ASCII and over-long
headers, deep nesting, binary form payloads, duplicate headers, and a Hypothesis grammar of
Slack's own shapes) while 100 slow clients hold connections. Every family gets 0 5xx and 0
resets, the log holds no traceback, /healthz answers within a second throughout, a mention
sent while the slow clients still hold on is answered within 10 s of its ack, and afterwards
1,000 ordinary mentions to four other channels are all answered, once each."""

from __future__ import annotations

import copy
import json
import os
import random
import socket
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from hypothesis import HealthCheck, given, settings

from bench._process import SECRET, BotProcess, post_signed
from tests.support.raw_http import deep, raw_post, signed_with
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, envelope, mention_pair, ts
from tests.support.slack_grammar import slack_bodies

PER_FAMILY = 150
SLOW_CLIENTS = 100
# The issue asks for 1,000; CHANCTX_HOSTILE_MENTIONS lowers it on a machine too busy for that.
MENTIONS = int(os.environ.get("CHANCTX_HOSTILE_MENTIONS", "1000"))
OTHERS = [f"C0ORDINRY{n}" for n in range(4)]
POISONED_TS: list[Any] = ["abc", "NaN", True, "123", "99999999999999999999999999999", None]

Request = tuple[bytes, list[tuple[bytes, bytes]]]


def signed(body: bytes, content_type: bytes = b"application/json") -> list[tuple[bytes, bytes]]:
    return signed_with(SECRET, body, content_type)


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


def poisoned_envelope(rng: random.Random, n: int) -> bytes:
    event: dict[str, Any] = {"type": rng.choice(["message", "app_mention"]), "channel": CHANNEL,
                             "user": "U1", "text": f"<@{BOT_USER}> hi", "ts": ts(5_000 + n)}  # fmt: skip
    body = envelope(event)
    poison: list[Any] = [None, 12, ["U1"], {"id": 3}, "not-a-ts", "1.2.3", "٣٤٥٦٧٨٩٠١٢.000001"]
    keys = ["type", "ts", "thread_ts", "channel", "user", "subtype", "event_id", "files", "edited"]
    for _ in range(rng.randint(1, 3)):
        target = event if rng.random() < 0.7 else body
        target[rng.choice(keys)] = rng.choice(poison + POISONED_TS)
    return _json(body)


def families(rng: random.Random) -> dict[str, Callable[[int], Request]]:
    binary = b"\xff\xfe\x00\x9c" + bytes(range(256))
    form = b"application/x-www-form-urlencoded"
    stamp = str(int(time.time())).encode()

    def poisoned_mention(n: int) -> Request:
        # The shapes that once wedged answering: anchors no message has, or no ts can be.
        anchor = POISONED_TS[n % len(POISONED_TS)] if n % 7 else ts(7_000 + n)
        event = {"type": "app_mention", "channel": CHANNEL, "user": "U1",
                 "text": f"<@{BOT_USER}> hi", "ts": anchor, "event_ts": ts(7_000 + n)}  # fmt: skip
        body = _json(envelope(event))
        return body, signed(body)

    def binary_body(n: int) -> Request:
        body = rng.randbytes(rng.randint(1, 300)) + b"\xff"
        return body, signed(body) if n % 2 else [(b"Content-Type", b"application/json")]

    def non_ascii_header(n: int) -> Request:
        body = _json(envelope({"type": "reaction_added", "user": "U1"}))
        bad = rng.choice(["v0=é☃", "v0=" + "ü" * 64, "١٢٣"]).encode()
        name = b"X-Slack-Signature" if n % 2 else b"X-Slack-Request-Timestamp"
        headers = [h for h in signed(body) if h[0] != name]
        return body, [*headers, (name, bad)]

    def long_header(n: int) -> Request:
        body = _json(envelope({"type": "reaction_added", "user": "U1"}))
        if n % 2:
            return body, [(b"X-Slack-Request-Timestamp", stamp),
                          (b"X-Slack-Signature", b"v0=" + b"f" * 20_000)]  # fmt: skip
        return body, [*signed(body), (b"X-Filler", b"a" * rng.randint(17_000, 60_000))]

    def deep_json(n: int) -> Request:
        body = deep(rng.choice([65, 500, 3_000, 20_000]))
        return body, signed(body)

    def deep_form(n: int) -> Request:
        body = b"payload=" + deep(rng.choice([65, 3_000, 20_000]))
        return body, signed(body, form)

    def binary_form(n: int) -> Request:
        body = b"payload=" + rng.randbytes(rng.randint(1, 200)) + binary[:8]
        return body, signed(body, form)

    def duplicate_headers(n: int) -> Request:
        body = _json(envelope({"type": "reaction_added", "user": "U1"}))
        extra = [(b"X-Slack-Signature", b"v0=bad"), (b"Content-Type", b"text/plain"),
                 (b"X-Slack-Request-Timestamp", b"1")][n % 3]  # fmt: skip
        return body, [*signed(body), extra] if n % 2 else [extra, *signed(body)]

    def garbage(n: int) -> Request:
        return rng.randbytes(rng.randint(0, 400)), [(b"Content-Type", b"application/json")]

    def json_shapes(n: int) -> Request:
        value = rng.choice([None, 7, "x", [], [1, {"a": None}], {"type": None}, {"event": []}])
        return _json(value), signed(_json(value))

    def poisoned(n: int) -> Request:
        body = poisoned_envelope(rng, n)
        return body, signed(body)

    return {
        "garbage": garbage, "json shapes": json_shapes, "poisoned envelopes": poisoned,
        "poisoned mentions": poisoned_mention, "non-utf8 bodies": binary_body,
        "non-ascii headers": non_ascii_header, "over-long headers": long_header,
        "deep json": deep_json, "deep form payloads": deep_form,
        "binary form payloads": binary_form, "duplicate headers": duplicate_headers,
    }  # fmt: skip


def grammar_requests(count: int) -> list[Request]:
    """``count`` bodies from the Slack grammar (tests/slack_grammar.py), deterministically."""
    drawn: list[Request] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(item=slack_bodies())
    def collect(item: tuple[bytes, str]) -> None:
        drawn.append((item[0], signed(item[0], item[1].encode())))

    collect()
    return drawn[:count]


def slow_client(port: int, stop: threading.Event) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as held:
        held.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n")
        while not stop.wait(0.5):
            try:
                held.sendall(b"X-Drip: 1\r\n")  # headers that never end
            except OSError:
                return


def _send(port: int, request: Request) -> int | None:
    try:
        return raw_post(port, *request)
    except OSError:
        return None


def _state() -> dict[str, Any]:
    state = copy.deepcopy(STATE)
    for channel in OTHERS:
        state["channels"][channel] = {"id": channel, "name": channel.lower()}
    return state


def _replies(slack: FakeSlackAPI, channel: str) -> Counter[str]:
    return Counter(
        str(m.get("thread_ts")) for m in slack.messages(channel) if m.get("user") == BOT_USER
    )


def _ask(bot: BotProcess, slack: FakeSlackAPI, at: str, channel: str) -> None:
    pair = mention_pair(at, "what changed in the deploy?", channel=channel)
    slack.mirror_event(pair[0]["event"])
    statuses = [post_signed(bot.url, e) for e in pair]
    assert statuses == [200, 200], statuses


def test_hostile_families_and_slow_clients_never_stop_the_answering(tmp_path: Path) -> None:
    rng = random.Random(2026)
    with FakeSlackAPI(_state()) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(tmp_path / "data", slack.url, claude.url)
        bot.start(timeout=180)  # a busy machine starts it slowly
        stop = threading.Event()
        health: list[float] = []

        def watch() -> None:
            while not stop.wait(0.1):
                started = time.monotonic()
                with urllib.request.urlopen(f"http://127.0.0.1:{bot.port}/healthz", timeout=5) as r:
                    assert r.status == 200
                health.append(time.monotonic() - started)

        slow = [
            threading.Thread(target=slow_client, args=(bot.port, stop)) for _ in range(SLOW_CLIENTS)
        ]
        watcher = threading.Thread(target=watch)
        by_family: dict[str, Counter[int | None]] = {}
        try:
            for thread in [*slow, watcher]:
                thread.start()
            planned = [(name, make(n)) for name, make in families(rng).items()
                       for n in range(PER_FAMILY)]  # fmt: skip
            planned += [("slack grammar", r) for r in grammar_requests(4 * PER_FAMILY)]
            rng.shuffle(planned)
            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(lambda p: _send(bot.port, p[1]), planned))
            for (name, _), status in zip(planned, statuses, strict=True):
                by_family.setdefault(name, Counter())[status] += 1
            # With the slow clients still holding on: a mention is answered soon after its ack.
            _ask(bot, slack, ts(9_000), CHANNEL)
            acked = time.monotonic()
            while time.monotonic() < acked + 30 and not _replies(slack, CHANNEL)[ts(9_000)]:
                time.sleep(0.05)
            latency = time.monotonic() - acked
        finally:
            stop.set()
            watcher.join(timeout=10)
            for thread in slow:
                thread.join(timeout=10)
        try:
            # Then 1,000 ordinary mentions to four other channels: every one answered, once.
            asked = {c: [ts(10_000 + n) for n in range(i, MENTIONS, len(OTHERS))]
                     for i, c in enumerate(OTHERS)}  # fmt: skip
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(lambda c: [_ask(bot, slack, at, c) for at in asked[c]], OTHERS))
            deadline = time.monotonic() + 120 + MENTIONS * 0.5
            while time.monotonic() < deadline:
                if sum(len(_replies(slack, c)) for c in OTHERS) >= MENTIONS:
                    break
                time.sleep(0.5)
            replies = {c: _replies(slack, c) for c in OTHERS}
            with urllib.request.urlopen(f"http://127.0.0.1:{bot.port}/readyz", timeout=5) as r:
                ready = json.loads(r.read())
        finally:
            bot.stop()
    log = "".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("bot-*.log")))
    print("\nstatus counts by family:")
    for name, counts in sorted(by_family.items()):
        print(f"  {name:22} {dict(sorted(counts.items(), key=lambda kv: str(kv[0])))}")
    print(f"answer latency after the ack, 100 slow clients holding on: {latency:.2f} s")
    print(f"ordinary mentions answered: {sum(len(r) for r in replies.values())} of {MENTIONS}")
    for name, counts in by_family.items():
        assert None not in counts, f"{name}: connections reset or refused: {counts}"
        assert all(s < 500 for s in counts if s is not None), f"{name}: {counts}"
    assert by_family["non-utf8 bodies"] == Counter({401: PER_FAMILY})
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
    assert health and max(health) < 1.0, f"/healthz took {max(health):.2f} s"
    assert latency < 10, f"answered {latency:.1f} s after its ack"
    for channel, counts in replies.items():
        assert sorted(counts) == sorted(asked[channel]), channel  # every mention answered
        assert set(counts.values()) == {1}, channel  # and once
    assert ready["answers"]["stuck"] == [], ready
