"""The pieces of ``bench.store_served`` that talk to a real ``chanctx run --http``: the fake
Slack's state, readiness, the query API, RssAnon, and signed events delivered over keep-alive
connections."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import SqliteChannelStore
from tqdm import tqdm

from bench._process import SECRET, BotProcess
from bench.search_speed import Corpus
from bench.store import TEAM, FastCorpus, channel_id

BOT_USER, BOT_ID = "U0STOREBOT", "B0STOREBOT"
KEY = "store-served-bench-reader"


def rss_anon(pid: int) -> int:
    """Anonymous resident memory of ``pid`` in bytes (the heap: no mapped files, no page cache)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no RssAnon for process {pid}")


def slack_state(channels: Sequence[str]) -> dict[str, Any]:
    users = Corpus(0).users
    return {
        "auth": {"team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "user": "chanctx"},
        "channels": {c: {"id": c, "name": f"eng-{c[-5:].lower()}"} for c in channels},
        "users": {
            u: {"id": u, "name": n, "profile": {"display_name": n}} for u, n in users.items()
        },
        "history": {},
    }


def ready_status(base: str) -> int:
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0


def query(base: str, channel: str, text: str) -> float:
    """One ``channel_context``-shaped question through the query API; seconds it took."""
    return ask(base, channel, text)[0]


def ask(base: str, channel: str, text: str) -> tuple[float, bytes]:
    """One question through the query API; (seconds it took, the answer's body)."""
    body = {"query": text, "channel": channel, "format": "json", "type_filters": ["message"]}
    request = urllib.request.Request(
        base + "/api/context/query",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"},
        method="POST",
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=900) as answer:
        found = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"the query API answered {answer.status}")
    return time.perf_counter() - started, found


def start_bot(bot: BotProcess, base: str) -> tuple[float, float]:
    """(Re)start the bot; seconds from spawn to ``/readyz`` 200, and from the port opening
    to it (the first is mostly the interpreter importing, the second the start's own work)."""
    spawned = time.perf_counter()
    bot.start(timeout=900)
    listening = time.perf_counter()
    while ready_status(base) != 200:
        if time.perf_counter() - spawned > 900:
            raise RuntimeError(f"not ready in 900 s: {bot.log_tail()}")
        time.sleep(0.02)
    ready = time.perf_counter()
    return ready - spawned, ready - listening


# -- ingest over HTTP --------------------------------------------------------------------------


def ingest_bodies(count: int, channels: int) -> list[bytes]:
    """``count`` message event envelopes over ``channels`` channels, serialised."""
    bodies: list[bytes] = []
    per = -(-count // channels)
    for number in range(channels):
        channel = channel_id(900_000 + number)
        for batch in FastCorpus(seed=1_000 + number).messages(
            channel, min(per, count - len(bodies))
        ):
            for message in batch:
                event = {
                    "type": "message", "channel": channel, "channel_type": "channel",
                    "user": message.user_id, "text": message.text, "ts": message.ts,
                    "event_ts": message.ts,
                    **({"thread_ts": message.thread_ts} if message.thread_ts else {}),
                }  # fmt: skip
                envelope = {
                    "type": "event_callback", "team_id": TEAM, "api_app_id": "A0STOREBENCH",
                    "event": event, "event_id": f"EvSTORE{len(bodies):010d}",
                    "event_time": int(float(message.ts)),
                    "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
                }  # fmt: skip
                bodies.append(json.dumps(envelope).encode())
        if len(bodies) >= count:
            break
    return bodies


def stored_after(data: Path, refused: list[int], label: str) -> int:
    """The messages the store in ``data`` holds once an ingest run is over; a run with any
    event refused is no measurement and stops the bench."""
    if refused:
        raise RuntimeError(f"{len(refused)} events refused ({refused[:5]}) on {label}")
    reader = SqliteChannelStore(data, read_only=True)
    try:
        return reader.stats().messages
    finally:
        reader.close()


def send_events(
    port: int, bodies: Sequence[bytes], senders: int, bar: Any = None
) -> tuple[float, list[int]]:
    """``bodies`` signed and sent to ``/slack/events`` from ``senders`` keep-alive connections,
    each waiting for its ack before its next event: the seconds it took, and every status that
    was not 200."""
    refused: list[int] = []
    started = time.perf_counter()
    threads = [
        threading.Thread(target=_send, args=(port, bodies[first::senders], refused, bar))
        for first in range(senders)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, refused


def _send(port: int, bodies: Sequence[bytes], refused: list[int], bar: Any) -> None:
    """One keep-alive connection: each body signed as Slack signs it (HMAC-SHA256 of
    ``v0:<timestamp>:<body>``, the timestamp taken as it is sent), written as one HTTP/1.1
    request, its answer read before the next. On a raw socket: ``http.client`` and slack_sdk's
    signer cost more CPU per event than the server's whole intake, and the senders share the
    server's cores (Slack's own senders do not)."""
    secret = SECRET.encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = b""
        for body in bodies:
            stamp = str(int(time.time())).encode()
            signature = hmac.new(secret, b"v0:" + stamp + b":" + body, hashlib.sha256).hexdigest()
            connection.sendall(
                b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                b"X-Slack-Request-Timestamp: %s\r\nX-Slack-Signature: v0=%s\r\n\r\n%s"
                % (len(body), stamp, signature.encode(), body)
            )
            status, pending = _answer(connection, pending)
            if status != 200:
                refused.append(status)
            if bar is not None:
                bar.update(1)


def _answer(connection: socket.socket, pending: bytes) -> tuple[int, bytes]:
    """(the status of the next answer on ``connection``, what was read past it)."""
    while b"\r\n\r\n" not in pending:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        pending += chunk
    head, _, rest = pending.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        rest += chunk
    return status, rest[length:]


def ingest(
    root: Path, bodies: Sequence[bytes], senders: int, label: str
) -> tuple[float, int, float]:
    """Deliver every body to a fresh bot whose data dir is under ``root``; (events a second,
    messages stored afterwards)."""
    channels = [channel_id(900_000 + n) for n in range(1_000)]
    data = root / "data"
    data.mkdir(parents=True)
    with FakeSlackAPI(slack_state(channels)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url)
        empty_start, _ = start_bot(bot, bot.url.removesuffix("/slack/events"))
        print(f"ingest {label}: sending {len(bodies):,} events", flush=True)
        try:
            with tqdm(total=len(bodies), unit="event", desc=f"ingest {label}", disable=None) as bar:
                took, refused = send_events(bot.port, bodies, senders, bar)
        finally:
            bot.stop()
    stored = stored_after(data, refused, label)
    return len(bodies) / took, stored, empty_start
