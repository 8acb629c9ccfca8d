"""Restarts of today's code on a store ``bench.store_served`` filled: seconds from spawn to
``/readyz`` 200 and to a first answer that finds the largest channel's oldest message, RssAnon,
and the Slack history reads each restart spent.

    python -m bench.store_served --messages 10000000 --channels 1000 --dir /big/run
    python -m bench.store_restart --dir /big/run --repeats 3

The served bench fills for half an hour or more at 10,000,000 messages; this one measures a
later commit's restart on what it left, without filling again. Bytecode is cached as an
installed chanctx has it (``bench.startup.build_env``; one unmeasured start fills the cache).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache.channel_store import SqliteChannelStore
from chanctx.context import Names

from bench._process import BotProcess
from bench._results import write_section
from bench._served_process import ask, rss_anon, slack_state, start_bot
from bench.search_speed import Corpus
from bench.startup import build_env
from bench.store import TEAM, channel_id
from bench.store_served import READS, latencies, probe_word, search_table_rows

MIB = 2**20


class Start(NamedTuple):
    """One restart: seconds from spawn to ready and to the first answer, whether that answer
    found the oldest message, RssAnon after it, Slack history reads spent."""

    ready: float
    first_answer: float
    found: bool
    rss: int
    reads: int


def one_start(bot: BotProcess, slack: FakeSlackAPI, largest: str) -> Start:
    base = bot.url.removesuffix("/slack/events")
    reads_before = sum(slack.call_counts().get(m, 0) for m in READS)
    spawned = time.perf_counter()
    to_ready, _ = start_bot(bot, base)
    answer = json.loads(ask(base, largest, f"what about {probe_word(largest)}?")[1])
    to_first = time.perf_counter() - spawned
    assert bot.process is not None
    rss = rss_anon(bot.process.pid)
    bot.stop()
    reads = sum(slack.call_counts().get(m, 0) for m in READS) - reads_before
    found = probe_word(largest) in json.dumps(answer["chunks"])
    return Start(to_ready, to_first, found, rss, reads)


def measure(run: Path, repeats: int) -> tuple[list[Start], int, int]:
    """``repeats`` measured starts after one that fills the bytecode cache; (starts, messages
    stored, channels)."""
    data = run / "served" / "data"
    reader = SqliteChannelStore(data, read_only=True)
    try:
        channels = sorted(key.channel for key in reader.channels(TEAM))
        stored = reader.stats().messages
    finally:
        reader.close()
    largest = channel_id(0)  # bench.store.plan puts the largest channel first
    starts: list[Start] = []
    with FakeSlackAPI(slack_state(channels)) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(
            data, slack.url, claude.url,
            extra_args=("--api-keys", str(run / "served" / "keys.json")),
            env=build_env(run, "deferred"),
        )  # fmt: skip
        for number in range(repeats + 1):
            start = one_start(bot, slack, largest)
            print(f"start {number}{'' if number else ' (unmeasured)'}: {start}", flush=True)
            if number:
                starts.append(start)
    return starts, stored, len(channels)


def searched(run: Path, queries: int) -> list[tuple[int, dict[str, float]]]:
    """One more start; each channel the served bench measures (10k, 100k and the largest)
    searched ``queries`` times once its index is built, as ``bench.store_served`` does."""
    data = run / "served" / "data"
    reader = SqliteChannelStore(data, read_only=True)
    try:
        sizes = {s.channel: s.messages for s in reader.stats().per_channel if s.team == TEAM}
    finally:
        reader.close()
    largest = max(sizes.values())
    measured = sorted((c for c, n in sizes.items() if n in (10_000, 100_000, largest)),
                      key=lambda c: sizes[c])  # fmt: skip
    corpus = Corpus(seed=11)  # the served bench's intents and names
    intents = corpus.intents(queries)
    names = Names(users=corpus.users, channels={c: "engineering" for c in sizes})
    out: list[tuple[int, dict[str, float]]] = []
    with FakeSlackAPI(slack_state(sorted(sizes))) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(
            data, slack.url, claude.url,
            extra_args=("--api-keys", str(run / "served" / "keys.json")),
            env=build_env(run, "deferred") | {"CHANCTX_LOG_LEVEL": "info"},  # builds logged
        )  # fmt: skip
        bot.start(timeout=900)
        try:
            for channel in measured:
                print(f"searching the {sizes[channel]:,}-message channel", flush=True)
                out.append(
                    (sizes[channel], latencies(bot, channel, sizes[channel], intents, names))
                )
                print(f"{sizes[channel]:,}: {out[-1][1]}", flush=True)
        finally:
            bot.stop()
    for size, found in out:  # the served process has stopped: the store is ours to read
        channel = next(c for c in measured if sizes[c] == size)
        found["tool_p50"], found["tool_p95"] = channel_context_in_process(
            data, channel, intents, names
        )
        print(f"{size:,}: channel_context in process {found['tool_p50'] * 1e3:.1f} ms", flush=True)
    return out


def channel_context_in_process(
    data: Path, channel: str, intents: Sequence[str], names: Names
) -> tuple[float, float]:
    """p50 / p95 seconds of channel_context's ranking as the served process runs it, timed in
    this process on the same store: an engine at the default ``--history-mb`` of 256 (the
    channel's newest part indexed, older matches pulled in through ``search_candidates``),
    each intent once after the build, through the tool's steps (the scope brought up to date
    for the intent, then ``search`` at the tool's default of 8 results, 3 a thread, signals
    explained). No HTTP, no rendering: what the issue's 10 ms target is about."""
    from chanctx.bot.core.built_context import ContextSettings
    from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
    from chanctx.bot.core.engine import ContextEngine
    from chanctx.bot.slack.intake import SelfIdentity
    from chanctx.tools import IndexedHistory
    from chanctx.tools._context_tool import PER_THREAD

    from bench._timed_search import timed_searches

    opened = OpenStore(SqliteChannelStore(data, read_only=True))
    engine = ContextEngine(
        me=SelfIdentity(), names=names, history=IndexedHistory(max_bytes=256 * MIB),
        record=ChannelRecord(opened, TEAM), settings=ContextSettings(max_wait_seconds=10.0),
    )  # fmt: skip
    assert engine.indexes is not None
    try:
        if not engine.indexes.wait_built(channel, 1_800.0)[0]:
            raise SystemExit(f"{channel}: no index built in the bench process in 30 min")
        if not engine.indexes.indexed(channel):
            raise SystemExit(f"{channel}: its index build failed (see the log)")
        took = timed_searches(engine, channel, intents, names, limit=8, per_thread=PER_THREAD)
    finally:
        opened.close()
    ordered = sorted(took)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def report(run: Path, starts: list[Start], stored: int, channels: int, search: int) -> str:
    ready = statistics.median(s.ready for s in starts)
    first = statistics.median(s.first_answer for s in starts)
    rss = statistics.median(s.rss for s in starts)
    found = all(s.found for s in starts)
    return "\n".join([
        f"`python -m bench.store_restart --dir {run.name} --repeats {len(starts)}"
        f"{f' --search {search}' if search else ''}`: today's",
        f"`chanctx run --http` restarted on the store `bench.store_served` left ({stored:,}",
        f"messages in {channels:,} channels, the largest {channel_id(0)}), against the loopback",
        "fakes, bytecode cached as installed; medians of the measured starts, seconds from spawn.",
        "The first answer is a query API question for a word only the largest channel's oldest",
        "message holds.",
        "",
        "| spawn to /readyz 200 | spawn to first answer | oldest message found | "
        "RssAnon after it | Slack history reads |",
        "|---:|---:|---:|---:|---:|",
        f"| {ready:.2f} s | {first:.2f} s | {'every start' if found else 'NOT always'} | "
        f"{rss / MIB:.0f} MiB | {sum(s.reads for s in starts)} |",
    ])  # fmt: skip


def search_report(searches: list[tuple[int, dict[str, float]]], queries: int) -> str:
    tool = "\n".join(
        f"| {size:,} | {r['served_p50'] * 1e3:.1f} / {r['served_p95'] * 1e3:.1f} "
        f"| {r['tool_p50'] * 1e3:.1f} / {r['tool_p95'] * 1e3:.1f} "
        f"| {r['tool_p50'] / r['memory_p50']:.2f}x | {r['tool_p50'] / r['fts_p50']:.2f}x |"
        for size, r in searches
    )
    return "\n".join([
        f"Search in one channel after one more start, p50 / p95 in ms, {queries} intents each, as",
        '"Channel store served" measures it: "served" through the query API of the restarted',
        "process once the channel's index is built (two tiers beyond `--history-mb`), the",
        "in-memory ranking on every message of the channel built in the bench process, and",
        "FTS5's plain `bm25()` top 25 on the same store.",
        "",
        "| channel size | served | in-memory, whole channel | FTS5 bm25() | served / in-memory "
        "| served / FTS5 |",
        "|---:|---:|---:|---:|---:|---:|",
        search_table_rows(searches),
        "",
        "`channel_context` itself, timed in the bench process once the served process stopped:",
        "an engine on the same store at the default `--history-mb` of 256 (the same two tiers),",
        "each intent once after the channel's build, the tool's steps (the index brought up to",
        "date for the intent, older matches pulled in, then the ranking at its default 8",
        "results) without HTTP or rendering; beside the served query API answer, and its",
        "ratios to the two in-process baselines above.",
        "",
        "| channel size | served (query API, HTTP) | channel_context in process "
        "| channel_context / in-memory | channel_context / FTS5 |",
        "|---:|---:|---:|---:|---:|",
        tool,
    ])  # fmt: skip


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_restart")
    parser.add_argument("--dir", type=Path, default=None, help="a store_served --dir run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--search", type=int, default=0, help="intents a channel (0: none)")
    parser.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md")
    args = parser.parse_args(argv)
    if args.dir is None:  # ``python -m bench all`` has no filled store to give it
        print("store_restart: nothing measured (give --dir, a bench.store_served --dir run)")
        return 0
    if not (args.dir / "served" / "data").is_dir():
        print(f"{args.dir}: no served/data in it (run bench.store_served --dir first)")
        return 2
    starts, stored, channels = measure(args.dir, args.repeats)
    body = report(args.dir, starts, stored, channels, args.search)
    if args.search:
        body += "\n\n" + search_report(searched(args.dir, args.search), args.search)
    print(body)
    if not args.no_write:
        write_section("Channel store restart", body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
