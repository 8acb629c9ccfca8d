"""Scale-out: mentions answered per second and the ack latency with one and two replicas.

Real `chanctx run --http` processes against the loopback fakes, the Messages API answering
after ``--claude-ms`` per request (the offline model makes two requests a mention: a search,
then the answer), every mention sent as Slack sends it (a signed `message` and a signed
`app_mention`) by ``--senders`` concurrent clients, the envelopes spread round-robin over the
replicas. Baseline in the same run: one process with its local data dir (no Redis). Then the
Redis memory a channel message costs in the change stream, and what one answered mention leaves.

    python -m bench.scale_out [--mentions 400] [--claude-ms 250] [--senders 8] [--no-write]
"""

from __future__ import annotations

import argparse
import copy
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import redis
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.bot.replicas.feed import ChangeFeed
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.bot.stores.redis_link import RedisLink
from tqdm import tqdm

from bench._process import BotProcess, free_port, post_signed
from bench._results import write_section
from bench.durable import BOT_USER, CHANNEL, STATE, TEAM, pair


class RedisProcess:
    """A throwaway redis-server (Debian's `redis-server`; append-only file on, as in
    production) on a free port."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server is missing: apt-get install redis-server")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(workdir),
             "--save", "", "--appendonly", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@dataclass
class Run:
    label: str
    replicas: int
    mentions: int
    seconds: float
    acks_ms: list[float]
    refused: int
    redis_bytes: int | None = None

    @property
    def per_second(self) -> float:
        return self.mentions / self.seconds

    def ack(self, q: float) -> float:
        ordered = sorted(self.acks_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _answered(slack: FakeSlackAPI) -> int:
    return sum(1 for m in slack.messages(CHANNEL) if m.get("user") == BOT_USER)


def _ready(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as answer:
            return int(answer.status) == 200
    except OSError:
        return False


def run(
    label: str, replicas: int, redis_url: str | None, mentions: int, claude_ms: int, senders: int
) -> Run:
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeSlackAPI(copy.deepcopy(STATE)) as slack,
        FakeAnthropicAPI(latency_ms=claude_ms) as claude,
    ):
        bots = []
        for i in range(replicas):
            bot = BotProcess(Path(tmp) / f"r{i}" / "data", slack.url, claude.url)
            (Path(tmp) / f"r{i}").mkdir()
            if redis_url:
                bot.env["CHANCTX_REDIS_URL"] = redis_url
            bots.append(bot)
        for bot in bots:
            bot.start()
        while not all(_ready(bot.port) for bot in bots):
            time.sleep(0.05)
        before = _redis_used(redis_url)
        acks: list[float] = []
        refused = 0
        lock = threading.Lock()

        def send(n: int) -> None:
            nonlocal refused
            envelopes = pair(n)
            slack.mirror_event(envelopes[0]["event"])
            for i, envelope in enumerate(envelopes):
                url = bots[(n + i) % replicas].url
                started = time.perf_counter()
                status = post_signed(url, envelope)
                took = (time.perf_counter() - started) * 1000
                with lock:
                    acks.append(took)
                    refused += status != 200

        started = time.monotonic()
        try:
            desc = f"{label}, Claude {claude_ms} ms: answered"
            with (
                ThreadPoolExecutor(senders) as pool,
                tqdm(total=mentions, desc=desc, disable=None) as bar,
            ):
                list(pool.map(send, range(mentions)))
                while (answered := _answered(slack)) < mentions:
                    bar.update(answered - bar.n)
                    time.sleep(0.05)
                bar.update(mentions - bar.n)
            seconds = time.monotonic() - started
            used = _redis_used(redis_url)
        finally:
            for bot in bots:
                bot.stop()
        grown = used - before if used is not None and before is not None else None
        return Run(label, replicas, mentions, seconds, acks, refused, grown)


def _redis_used(url: str | None) -> int | None:
    if url is None:
        return None
    client = redis.Redis.from_url(url)
    try:
        return int(client.info("memory")["used_memory"])
    finally:
        client.close()


_TEXTS = (
    "deploy 412 is rolling out to the canary now, watch the p99 on payments",
    "I see 502s from the gateway in eu-west since 9:40, anyone else?",
    "rolling back would take ten minutes; the migration locks the ledger table",
    "ok, rollback started, I'll post in #incidents when it's done",
)


def stream_bytes_per_message(url: str, messages: int = 20_000) -> tuple[float, float]:
    """Redis memory per channel message in the change stream (bytes), and the mean size of
    the message's JSON in it, measured on realistic Slack message events."""
    client = redis.Redis.from_url(url)
    client.flushall()
    link = RedisLink(url)
    link.check()
    feed = ChangeFeed(
        link, ContextEngine(me=SelfIdentity(BOT_USER, "B0")), TEAM, "bench", retention=10**9
    )
    before = int(client.info("memory")["used_memory"])
    for n in range(messages):
        event = {
            "type": "message", "channel": CHANNEL, "user": f"U{n % 40}",
            "text": _TEXTS[n % len(_TEXTS)] + f" ({n})", "ts": f"{1_781_020_800 + n}.000100",
            "event_ts": f"{1_781_020_800 + n}.000100", "channel_type": "channel",
        }  # fmt: skip
        feed.publish(event, f"Ev{n:08d}")
    after = int(client.info("memory")["used_memory"])
    entries = client.xrange(f"chanctx:{TEAM}:changes", count=1_000)
    size = statistics.mean(len(fields[b"c"]) for _, fields in entries)
    client.flushall()
    link.close()
    client.close()
    return (after - before) / messages, size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mentions", type=int, default=400)
    parser.add_argument("--claude-ms", type=int, default=250)
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    tables: list[tuple[int, list[Run]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisProcess(Path(tmp))
        try:
            setups: list[tuple[str, int, str | None]] = [
                ("one process, local data dir (baseline)", 1, None),
                ("one replica on Redis", 1, server.url),
                ("two replicas on Redis", 2, server.url),
            ]
            # A model that takes time (answers wait on Claude: replicas add workers), then an
            # instant one (the machine's two cores are the limit, shared by every process).
            for claude_ms in (args.claude_ms, 0):
                runs: list[Run] = []
                for label, replicas, url in setups:
                    if url:
                        redis.Redis.from_url(url).flushall()
                    runs.append(run(label, replicas, url, args.mentions, claude_ms, args.senders))
                    print(f"{label}, Claude {claude_ms} ms: {runs[-1].per_second:.1f} mentions/s")
                tables.append((claude_ms, runs))
            per_message, json_size = stream_bytes_per_message(server.url)
        finally:
            server.stop()
    rows = "\n".join(
        f"| {claude_ms} ms | {r.label} | {r.per_second:.1f} | "
        f"{r.per_second / runs[0].per_second:.2f}x | {r.ack(0.5):.1f} ms | "
        f"{r.ack(0.99):.1f} ms | {r.refused} |"
        for claude_ms, runs in tables
        for r in runs
    )
    two = tables[0][1][-1]

    def ratio(runs: list[Run]) -> float:
        return runs[-1].per_second / runs[0].per_second

    per_mention = (two.redis_bytes or 0) / two.mentions
    body = (
        f"`python -m bench.scale_out`: {args.mentions:,} mentions (a signed `message` and "
        f"`app_mention` each, {args.senders} concurrent senders, envelopes round-robin over "
        "the replicas) to real `chanctx run --http` processes; the fake Messages API takes "
        f"{args.claude_ms} ms a request, then 0 ms (the offline model makes two requests a "
        "mention); 4 answer workers a replica; Redis 7 with its append-only file on; all of it "
        "(senders, fakes, Redis, replicas) on one 2-core machine.\n\n"
        "| Claude | setup | mentions/s | vs baseline | ack p50 | ack p99 | refused |\n"
        f"|---|---|---:|---:|---:|---:|---:|\n{rows}\n\n"
        f"Two replicas answer {ratio(tables[0][1]):.2f}x the mentions per second of one process "
        f"when Claude takes {args.claude_ms} ms (a replica's workers mostly wait on Claude) and "
        f"{ratio(tables[1][1]):.2f}x with an instant model, though the replicas, Redis, the "
        "fakes and the senders all share the machine's two cores. Acks stay in the tens of "
        "milliseconds: an event is one Redis script before its 200.\n\n"
        f"Redis memory: a channel message costs **{per_message:.0f} bytes** in the change "
        f"stream (20,000 message events; their JSON averages {json_size:.0f} bytes), so the "
        "default retention of 100,000 changes is about "
        f"{per_message * 100_000 / 2**20:.0f} MiB. One answered mention left "
        f"{per_mention / 1024:.1f} KiB in Redis in the two-replica run (its two changes, its "
        "thread's session log with the context package, the done turn and the event ids kept "
        "15 and 10 minutes)."
    )
    print(body)
    if not args.no_write:
        write_section("Scale-out on Redis", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
