"""The served half of ``bench.store_postgres``: a real ``chanctx run --http`` on a filled store
(the SQLite file in its data dir, or ``--database-url`` with an empty data dir), restarted and
asked the same intents through the query API.

Built from the served benches' pieces (``bench._served_process``, ``bench.store_served``,
``bench.store_restart``) so the numbers read like theirs: the restart is
``store_restart.one_start`` (spawn to ``/readyz`` 200, to a first answer for a word only the
channel's oldest message holds, RssAnon, Slack history reads), the searches go through
``_served_process.ask`` once the channel's index is built (``store_served.wait_built``).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI

from bench._process import BotProcess
from bench._served_process import KEY, ask, slack_state, start_bot
from bench.startup import build_env
from bench.store_restart import Start, one_start
from bench.store_served import READS, bot_log, wait_built

TOP = 10  # the answers' first blocks compared between the stores
_BUILT = re.compile(
    r"channel (\S+): index built from the channel store: (\d+) messages in ([\d.]+) s"
)


@dataclass
class Served:
    """One store served at one size: its restart, its index build and its answers."""

    start: Start
    reads: int  # Slack history reads over both starts (the measured one and the searched one)
    indexed: int  # messages in the channel's index, from the build's log line (0: not logged)
    build: float  # the build's own seconds, from the same line
    p50: float
    p95: float
    timed_out: int  # answers cut by --max-wait
    tops: list[list[str]] = field(default_factory=list)  # the first TOP block ids per intent


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def serve(
    root: Path, data: Path, channel: str, size: int, intents: Sequence[str],
    database_url: str | None,
) -> Served:  # fmt: skip
    """Restart a bot on the store (measured), then start it once more and ask ``intents`` once
    the channel's index is built. ``root`` holds the keys, the bytecode cache and the logs."""
    keys = root / "keys.json"
    keys.write_text(json.dumps({KEY: "*"}))
    data.mkdir(parents=True, exist_ok=True)
    env = build_env(root, "deferred") | {"CHANCTX_LOG_LEVEL": "info"}  # builds logged at INFO
    if database_url is not None:
        env["CHANCTX_DATABASE_URL"] = database_url
    with FakeSlackAPI(slack_state([channel])) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(
            data, slack.url, claude.url, extra_args=("--api-keys", str(keys)), env=env
        )  # fmt: skip
        start = one_start(bot, slack, channel)
        print(f"{channel}: restart {start}", flush=True)
        base = bot.url.removesuffix("/slack/events")
        start_bot(bot, base)
        try:
            indexed, build = _built(bot, base, channel, size, intents[0])
            took: list[float] = []
            tops: list[list[str]] = []
            timed_out = 0
            for intent in intents:
                seconds, body = ask(base, channel, intent)
                answer = json.loads(body)
                took.append(seconds)
                tops.append([c["block_id"] for c in answer["chunks"][:TOP]])
                timed_out += bool(answer.get("timed_out"))
        finally:
            bot.stop()
        reads = sum(slack.call_counts().get(m, 0) for m in READS)
    p50, p95 = percentiles(took)
    return Served(start, reads, indexed, build, p50, p95, timed_out, tops)


def _built(bot: BotProcess, base: str, channel: str, size: int, intent: str) -> tuple[int, float]:
    """Ask once (it starts the channel's index build) and wait until the log says the build
    ended; (messages indexed, the build's seconds), zeros when none was logged (a build under a
    second is logged at DEBUG only)."""
    logged = len(bot_log(bot))
    started = time.perf_counter()
    ask(base, channel, intent)
    if not wait_built(bot, [channel], max(30.0, size / 200), logged):  # 1,400 messages/s
        print(f"{channel}: no build logged after {time.perf_counter() - started:.0f} s", flush=True)
        return 0, 0.0
    found = _BUILT.search(bot_log(bot)[logged:])
    return (int(found.group(2)), float(found.group(3))) if found else (0, 0.0)


def warm(workdir: Path) -> None:
    """One unmeasured start on an empty data dir: it fills the bytecode cache every measured
    start then reads, as an installed chanctx has it."""
    data = workdir / "warm" / "data"
    data.mkdir(parents=True)
    with FakeSlackAPI(slack_state([])) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(data, slack.url, claude.url,
                         env=build_env(workdir, "deferred"))  # fmt: skip
        start_bot(bot, bot.url.removesuffix("/slack/events"))
        bot.stop()


def serve_both(
    workdir: Path, channel: str, size: int, intents: Sequence[str], database_url: str
) -> dict[str, float]:
    """The SQLite store (its data dir ``workdir/sqlite-<size>/data``, filled) then the
    PostgreSQL one (an empty data dir, ``database_url`` filled), one after the other on the
    same machine; their numbers, keyed as ``bench.store_postgres``'s rows are."""
    results = {
        "sqlite": serve(workdir, workdir / f"sqlite-{size}" / "data", channel, size, intents, None),
        "pg": serve(workdir, workdir / f"pg-{size}" / "data", channel, size, intents, database_url),
    }
    row: dict[str, float] = {}
    for name, got in results.items():
        row |= {
            f"{name}_ready": got.start.ready, f"{name}_first": got.start.first_answer,
            f"{name}_found": float(got.start.found), f"{name}_rss": float(got.start.rss),
            f"{name}_reads": float(got.reads), f"{name}_indexed": float(got.indexed),
            f"{name}_build": got.build, f"{name}_p50": got.p50, f"{name}_p95": got.p95,
            f"{name}_timed_out": float(got.timed_out),
        }  # fmt: skip
    pairs = list(zip(results["sqlite"].tops, results["pg"].tops, strict=True))
    row["same_top"] = sum(a == b for a, b in pairs) / len(pairs)
    row["overlap"] = statistics.mean(_overlap(a, b) for a, b in pairs)
    row["queries"] = float(len(pairs))
    return row


def _overlap(first: list[str], second: list[str]) -> float:
    """The share of the larger top's blocks the other holds (two empty answers agree)."""
    wider = max(len(set(first)), len(set(second)))
    return len(set(first) & set(second)) / wider if wider else 1.0


def served_table(rows: Sequence[dict[str, float]]) -> list[str]:
    """The served table's lines: one row per size and store."""
    lines = [
        "| messages | store | spawn to /readyz 200 (s) | spawn to first answer (s) | oldest "
        "message found | RssAnon after it (MiB) | Slack history reads | indexed | index build "
        "(s) | query p50 (ms) | query p95 (ms) | answers cut by --max-wait |",
        "|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        for name, label in (("sqlite", "SQLite"), ("pg", "PostgreSQL")):
            lines.append(
                f"| {int(r['size']):,} | {label} | {r[f'{name}_ready']:.2f} | "
                f"{r[f'{name}_first']:.2f} | {'yes' if r[f'{name}_found'] else 'NO'} | "
                f"{r[f'{name}_rss'] / 2**20:,.0f} | {int(r[f'{name}_reads'])} | "
                f"{int(r[f'{name}_indexed']):,} | {r[f'{name}_build']:.1f} | "
                f"{r[f'{name}_p50'] * 1e3:,.1f} | {r[f'{name}_p95'] * 1e3:,.1f} | "
                f"{int(r[f'{name}_timed_out'])} |"
            )
    return lines


def identity_lines(rows: Sequence[dict[str, float]]) -> list[str]:
    """The two stores' answers compared: identical first TOP blocks, and their mean overlap."""
    lines = [
        f"| messages | identical top {TOP} (share of intents) | top-{TOP} overlap (mean) |",
        "|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {int(r['size']):,} | {r['same_top']:.2f} | {r['overlap']:.2f} |")
    return lines
