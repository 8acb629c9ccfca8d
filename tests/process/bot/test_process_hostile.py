"""2,000 fuzzed bodies and 100 slow clients against a real `chanctx run --http`: no 5xx, no reset,
/healthz answers within a second throughout, and a real mention afterwards is answered."""

from __future__ import annotations

import copy
import json
import random
import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess, post_signed
from tests.support.slack_events import BOT_USER, CHANNEL, STATE, envelope, mention_pair, ts

BODIES = 2_000
SLOW_CLIENTS = 100


def fuzzed(rng: random.Random, n: int) -> tuple[bytes, bool]:
    """A body, and whether to sign it: garbage, JSON of every shape, envelopes with bad fields."""
    kind = n % 5
    if kind == 0:
        return rng.randbytes(rng.randint(0, 400)), False
    if kind == 1:
        value: Any = rng.choice([None, 7, "x", [], [1, {"a": None}], {"type": None}, {"event": []}])
        return json.dumps(value).encode(), True
    event: dict[str, Any] = {"type": "message", "channel": CHANNEL, "user": "U1",
                             "text": "<@U0BOT00001> hi", "ts": ts(5_000 + n)}  # fmt: skip
    body = envelope(event)
    poison: list[Any] = [None, 12, ["U1"], {"id": 3}, "not-a-ts", "1.2.3", "٣٤٥٦٧٨٩٠١٢.000001"]
    for _ in range(rng.randint(1, 3)):
        target = event if rng.random() < 0.7 else body
        target[rng.choice(["type", "ts", "thread_ts", "channel", "user", "subtype", "event_id",
                           "files", "edited", "item"])] = rng.choice(poison)  # fmt: skip
    if kind == 4:
        return json.dumps(body).encode(), False  # unsigned: 401
    return json.dumps(body).encode(), True


def slow_client(port: int, stop: threading.Event) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as held:
        held.sendall(b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5000\r\n")
        while not stop.wait(0.5):
            try:
                held.sendall(b"X-Drip: 1\r\n")  # headers that never end
            except OSError:
                return


def test_fuzzed_bodies_and_slow_clients_never_break_the_server(tmp_path: Path) -> None:
    rng = random.Random(2026)
    with FakeSlackAPI(copy.deepcopy(STATE)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(tmp_path / "data", slack.url, claude.url)
        bot.start()
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
        try:
            for thread in [*slow, watcher]:
                thread.start()
            bodies = [fuzzed(rng, n) for n in range(BODIES)]
            with ThreadPoolExecutor(8) as pool:
                statuses = list(pool.map(lambda b: _send(bot.url, *b), bodies))
            # Afterwards the bot still answers a real mention.
            pair = mention_pair(ts(9_000), "are you still there?")
            slack.mirror_event(pair[0]["event"])
            assert all(post_signed(bot.url, e) == 200 for e in pair)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not _replied(slack, ts(9_000)):
                time.sleep(0.1)
            answered = _replied(slack, ts(9_000))
        finally:
            stop.set()
            watcher.join(timeout=10)
            for thread in slow:
                thread.join(timeout=10)
            bot.stop()
    counts = {s: statuses.count(s) for s in set(statuses)}
    assert None not in counts, f"connections reset or refused: {counts}"
    assert all(200 <= s < 500 for s in counts if s is not None), counts
    assert counts.get(401, 0) >= BODIES // 5  # the unsigned ones, at least
    assert health and max(health) < 1.0, f"/healthz took {max(health):.2f} s"
    assert answered


def _send(url: str, body: bytes, sign: bool) -> int | None:
    if sign:
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if parsed is not None or body == b"null":
            return post_signed(url, parsed, raw=body)
    return post_signed(url, None, raw=body, sign=False)


def _replied(slack: FakeSlackAPI, anchor: str) -> bool:
    return any(
        m.get("user") == BOT_USER and m.get("thread_ts") == anchor for m in slack.messages(CHANNEL)
    )
