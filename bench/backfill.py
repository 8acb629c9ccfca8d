"""``python -m bench backfill``: backfill of a 10,000-message channel under both Slack tiers.

A real ``chanctx run --http`` process against the fake Slack, which enforces the tier (Tier 3:
50 calls a minute per history method; limited: 1 call a minute of 15 messages, 429 with
Retry-After beyond). The channel (10,000 messages, 100 threads of 5 replies) is only in Slack;
one live message makes it known and ``--backfill all`` pages it into the store. Meanwhile a
mention is sent every few seconds, alternately a new question and a question in an old
thread whose replies the store does not hold yet (so that answer needs its own
``conversations.replies``, competing with the backfill for the budget), and its latency
(event posted -> answer in the fake Slack) is measured; the same mentions after the backfill
finished are the baseline.

The limited tier's real minute would make this a day-long run (667 pages at one a minute), so
its minute is shortened (``--slack-minute-seconds`` on both sides; the rules stay Slack's):
minutes to complete are given in Slack minutes (real-time equivalent = measured seconds x 60 /
the minute's length). Tier 3 runs on a real minute.
"""

from __future__ import annotations

import copy
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import SqliteChannelStore

from bench._process import BotProcess, post_signed
from bench._results import write_section

TEAM, CHANNEL, BOT_USER, BOT_ID = "T0BENCH001", "C0BACKFILL", "U0BENCHBOT", "B0BENCHBOT"
MESSAGES, THREADS, REPLIES = 10_000, 100, 5
# (tier, seconds a Slack minute lasts in the run)
RUNS = (("standard", 60.0), ("limited", 0.3))
MENTION_EVERY = 3.0  # seconds between mentions while the backfill runs


def scaled() -> int:
    return int(os.environ.get("CHANCTX_BENCH_BACKFILL_MESSAGES", MESSAGES))


def channel_state(messages: int) -> dict[str, Any]:
    end = time.time() - 60.0
    history: list[dict[str, Any]] = []
    threads = max(1, messages * THREADS // MESSAGES)
    roots = {n * (messages // threads) for n in range(threads)}
    for n in range(messages):
        at = end - (messages - n) * 60.0
        ts = f"{at:.6f}"
        item: dict[str, Any] = {"type": "message", "ts": ts, "user": f"U{n % 7}",
                                "text": f"status {n}: queue depth {n % 23}"}  # fmt: skip
        if n in roots:
            replies = [f"{at + 1 + r:.6f}" for r in range(REPLIES)]
            item.update(thread_ts=ts, reply_count=REPLIES, latest_reply=replies[-1])
            history += [
                {"type": "message", "ts": r, "thread_ts": ts, "user": "U1", "text": f"re {n}"}
                for r in replies
            ]
        history.append(item)
    return {
        "auth": {"team_id": TEAM, "user_id": BOT_USER, "bot_id": BOT_ID, "team": "Bench"},
        "channels": {CHANNEL: {"name": "backfill"}},
        "users": {},
        "history": {CHANNEL: history},
    }


def envelope(event: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": "event_callback", "team_id": TEAM, "api_app_id": "A0BENCH",
            "event_id": f"Ev{n:08d}{time.monotonic_ns() % 10**6}", "event_time": int(time.time()),
            "event": event}  # fmt: skip


def message(text: str, **extra: Any) -> dict[str, Any]:
    at = f"{time.time():.6f}"
    return {"type": "message", "channel": CHANNEL, "user": "U1", "text": text, "ts": at,
            "event_ts": at, "channel_type": "channel", **extra}  # fmt: skip


class Run:
    def __init__(self, tier: str, minute: float, messages: int, work: Path) -> None:
        self.tier, self.minute, self.messages, self.work = tier, minute, messages, work
        self.state = channel_state(messages)
        self.roots = [m["ts"] for m in self.state["history"][CHANNEL] if m.get("reply_count")]
        self.sent = 0

    def cursor_complete(self, data: Path) -> bool:
        try:
            reader = SqliteChannelStore(data, read_only=True)
        except Exception:
            return False
        try:
            cursor = reader.cursor(TEAM, CHANNEL, "history")
            return cursor is not None and cursor.complete
        finally:
            reader.close()

    def ask(self, bot: BotProcess, slack: FakeSlackAPI, in_old_thread: bool) -> float:
        """One mention; seconds until the bot's answer reached the fake Slack."""
        self.sent += 1
        extra: dict[str, Any] = {}
        if in_old_thread and self.roots:
            extra["thread_ts"] = self.roots.pop(0)  # the oldest: backfilled last
        text = f"<@{BOT_USER}> question {self.sent}: what was the queue depth?"
        event = message(text, **extra)
        slack.mirror_event(event)
        mention = {**event, "type": "app_mention"}
        mention.pop("channel_type", None)
        answered = {s["ts"] for s in slack.sent if s["channel"] == CHANNEL}
        started = time.monotonic()
        assert post_signed(bot.url, envelope(event, self.sent * 2)) == 200
        assert post_signed(bot.url, envelope(mention, self.sent * 2 + 1)) == 200
        while not {s["ts"] for s in slack.sent if s["channel"] == CHANNEL} - answered:
            if time.monotonic() - started > 300:
                raise RuntimeError(f"no answer in 300 s: {bot.log_tail()}")
            time.sleep(0.02)
        return time.monotonic() - started

    def measure(self) -> dict[str, Any]:
        data = self.work / f"{self.tier}" / "data"
        data.parent.mkdir(parents=True)
        with (
            FakeSlackAPI(copy.deepcopy(self.state), tier=self.tier,
                         minute_seconds=self.minute) as slack,
            FakeAnthropicAPI() as claude,
        ):  # fmt: skip
            args = ("--slack-tier", self.tier, "--slack-minute-seconds", f"{self.minute:g}",
                    "--backfill", "all", "--max-wait", "5")  # fmt: skip
            bot = BotProcess(data, slack.url, claude.url, extra_args=args)
            bot.env["SLACK_BOT_TOKEN"] = "xoxb-bench"
            bot.env["CHANCTX_LOG_LEVEL"] = os.environ.get("CHANCTX_BENCH_LOG_LEVEL", "warning")
            bot.start(timeout=300)
            try:
                event = message("morning all")
                slack.mirror_event(event)
                started = time.monotonic()
                assert post_signed(bot.url, envelope(event, 0)) == 200
                during: list[float] = []
                while not self.cursor_complete(data):
                    during.append(self.ask(bot, slack, in_old_thread=len(during) % 2 == 1))
                    time.sleep(MENTION_EVERY)
                took = time.monotonic() - started
                after = [self.ask(bot, slack, in_old_thread=n % 2 == 1) for n in range(10)]
            finally:
                bot.stop()
            reader = SqliteChannelStore(data, read_only=True)
            try:
                stored = {m.ts for m in reader.messages(TEAM, CHANNEL)}
            finally:
                reader.close()
            wanted = {m["ts"] for m in self.state["history"][CHANNEL]}
            calls = slack.call_counts()
            refused = sum(1 for f in slack.failures if f[1] == 429)
        return {
            "tier": self.tier, "minute": self.minute, "seconds": took,
            "slack_minutes": took / self.minute, "during": during, "after": after,
            "missing": len(wanted - stored), "missing_ts": sorted(wanted - stored)[:10], "history": calls.get("conversations.history", 0),
            "replies": calls.get("conversations.replies", 0), "refused": refused,
            "listing": calls.get("users.conversations", 0),
        }  # fmt: skip


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(results: list[dict[str, Any]], messages: int) -> str:
    rows = [
        "| tier | minute lasted | backfill took (measured) | Slack minutes (real-time equivalent) "
        "| history / replies calls (429s) | listing calls | missing after | answers during: n, p50, p95 "
        "| answers after: p50, p95 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rows.append(
            f"| {r['tier']} | {r['minute']:g} s | {r['seconds']:.1f} s "
            f"| {r['slack_minutes']:.1f} min ({r['slack_minutes'] / 60:.2f} h) "
            f"| {r['history']} / {r['replies']} ({r['refused']}) | {r['listing']} | {r['missing']} "
            f"| {len(r['during'])}, {statistics.median(r['during']) * 1000:.0f} ms, "
            f"{pct(r['during'], 0.95) * 1000:.0f} ms "
            f"| {statistics.median(r['after']) * 1000:.0f} ms, {pct(r['after'], 0.95) * 1000:.0f} ms |"
        )
    return (
        f"Backfill of one channel of {messages:,} messages "
        f"({max(1, messages * THREADS // MESSAGES)} threads of {REPLIES} "
        "replies) by a real `chanctx run --http` against the fake Slack enforcing the tier, "
        "`--backfill all`; the bot finds the channel by `users.conversations` (listing calls: "
        "that method's calls, under the same tier) as well as by one live message. The limited tier's minute is shortened (both sides, "
        "`--slack-minute-seconds`): its duration is given in Slack minutes, the real-time "
        "equivalent (measured seconds x 60 / the minute's length). Answers: a mention every "
        f"{MENTION_EVERY:g} s while the backfill runs, every other one in an old thread the "
        "store does not hold yet (its own `conversations.replies`), from event to answer in "
        'Slack; "after": ten more once it finished, the baseline.\n\n' + "\n".join(rows)
    )


def main() -> int:
    messages = scaled()
    results = []
    keep = os.environ.get("CHANCTX_BENCH_BACKFILL_KEEP")  # a dir to keep the runs in
    with tempfile.TemporaryDirectory(prefix="bench-backfill-") as scratch:
        work = keep or scratch
        wanted = os.environ.get("CHANCTX_BENCH_BACKFILL_TIERS", "standard,limited").split(",")
        for tier, minute in [run for run in RUNS if run[0] in wanted]:
            print(f"backfill: {tier}, a minute of {minute:g} s ...", file=sys.stderr, flush=True)
            result = Run(tier, minute, messages, Path(work)).measure()
            print(result, file=sys.stderr, flush=True)
            results.append(result)
    write_section("Backfill under Slack's tiers", table(results, messages))
    return 0 if all(r["missing"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
