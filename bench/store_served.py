"""The channel store served by a real ``chanctx run --http``: ingest over HTTP with durability on,
RssAnon at several stored counts, bytes on disk, restart-to-ready, and search through the
running process against the in-memory index and a plain FTS5 ``bm25()`` query, in one run.

    python -m bench store_served     # 1.5M messages, 100 channels: 25 minutes on 2 loaded cores
    python -m bench.store_served --messages 10000000 --channels 1000 --largest 1000000

The workspace is the one ``bench.store`` plans (one channel of ``--largest`` messages, one of
100,000 and one of 10,000 when they fit, the rest spread evenly) and its synthetic chat. It is
filled in stages, ``fill`` being the one place that writes (the store's batch writer today;
a bulk import path can replace it there), each channel with the "history" cursor an import
leaves, so the bot serves it from the store without asking Slack. After each stage the bot is
started on the data dir against the loopback fakes: seconds to ``/readyz`` 200 and to the first
answered query, RssAnon once ready and after one query per measured channel. At the last
stage each measured channel is searched through the query API (``type_filters: ["message"]``,
what ``channel_context`` returns), by today's ranking on a ``ChannelIndex`` of every message of
the channel built here, and by ``bm25()`` over the store's FTS5 index (top 25).

Ingest: ``--events`` signed message events, sent by ``--senders`` keep-alive clients, into a
fresh data dir on disk (``synchronous=FULL``: each group commit fsynced before its acks)
against the same process with its data dir on tmpfs (/dev/shm: the commits, no disk). The
product has no store-less mode any more; tmpfs is the same intake with durability's cost
taken out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chanctx.bot.launch.options import Options
from chanctx.bot.replay.fake_anthropic import FakeAnthropicAPI
from chanctx.bot.replay.fake_slack import FakeSlackAPI
from chanctx.cache import ts_key
from chanctx.cache.channel_store import (
    BackfillCursor,
    CursorSaved,
    MessagePosted,
    SqliteChannelStore,
    StoreEvent,
)
from chanctx.context import Names
from chanctx.tools._index import ChannelIndex
from chanctx.tools._keywords import keywords
from chanctx.tools._search import search
from tqdm import tqdm

from bench._process import BotProcess
from bench._results import write_section
from bench._served_process import (
    KEY,
    ask,
    ingest,
    ingest_bodies,
    query,
    rss_anon,
    slack_state,
    start_bot,
)
from bench.beyond_budget import PlainBm25Store
from bench.search_speed import Corpus
from bench.store import TEAM, FastCorpus, plan

READS = ("conversations.history", "conversations.replies")
MIB = 2**20


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


# -- filling -----------------------------------------------------------------------------------


def fill(data_dir: Path, sizes: dict[str, int], seeds: dict[str, int]) -> float:
    """Write ``sizes`` (channel -> messages) into the store; seconds spent in the writer.

    The one fill step: today the store's batch writer (10,000 events a commit), each channel
    ending with the "history" cursor an import leaves (complete: nothing older to fetch)."""
    store = SqliteChannelStore(data_dir)
    took = 0.0
    try:
        with tqdm(total=sum(sizes.values()), unit="msg", desc="fill", disable=None) as bar:
            for channel, size in sizes.items():
                first: str | None = None
                for batch in FastCorpus(seed=seeds[channel]).messages(channel, size):
                    if first is None:  # the oldest message carries a word only it holds
                        first = batch[0].ts
                        text = f"{batch[0].text} {probe_word(channel)}"
                        batch[0] = batch[0].model_copy(update={"text": text})
                    events: list[StoreEvent] = [MessagePosted(TEAM, m) for m in batch]
                    started = time.perf_counter()
                    store.write(events)
                    took += time.perf_counter() - started
                    bar.update(len(batch))
                cursor = BackfillCursor(oldest_ts=first, complete=True, updated=time.time())
                store.write([CursorSaved(TEAM, channel, "history", cursor)])
    finally:
        store.close()
    return took


def probe_word(channel: str) -> str:
    """A word only the channel's oldest message holds: found by a search that covers it all."""
    return f"oldestfact{channel.lower()}"


def stages(sizes: dict[str, int]) -> list[dict[str, int]]:
    """The channels to add before each measurement: each measured channel, smallest first,
    then the rest in one stage."""
    largest = max(sizes.values())
    measured = sorted(
        (c for c, n in sizes.items() if n in (10_000, 100_000, largest)), key=lambda c: sizes[c]
    )
    out = [{c: sizes[c]} for c in measured]
    rest = {c: n for c, n in sizes.items() if c not in measured}
    if rest:
        out.append(rest)
    return out


# -- the process -------------------------------------------------------------------------------


@dataclass
class Stage:
    stored: int
    disk_bytes: int
    to_ready: float
    listening_to_ready: float
    to_first_answer: float
    finds_oldest: bool
    rss_ready: int
    rss_searched: int
    rss_built: int
    built_after: float | None  # seconds from spawn until the searched channels' builds ended
    slack_reads: int


def bot_log(bot: BotProcess) -> str:
    log = bot.data_dir.parent / f"bot-{bot.starts}.log"
    return log.read_text(errors="replace") if log.exists() else ""


def wait_built(bot: BotProcess, channels: Sequence[str], timeout: float, after: int = 0) -> bool:
    """Wait until the bot's log says (past its first ``after`` characters) that each of
    ``channels``' index was built; False when ``timeout`` passed first (a build under a second
    is logged at DEBUG only, so a small channel's may never show)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        text = bot_log(bot)[after:]
        if all(f"channel {c}: index built" in text for c in channels):
            return True
        time.sleep(0.5)
    return False


def has_index(bot: BotProcess, channel: str) -> bool:
    """Does the running bot hold ``channel``'s index (built, and not dropped since)?"""
    text = bot_log(bot)
    return text.rfind(f"channel {channel}: index built") > text.rfind(
        f"channel {channel}: index dropped"
    )


def measure_stage(
    bot: BotProcess,
    slack: FakeSlackAPI,
    searched: Sequence[str],
    sizes: Sequence[int],
    intent: str,
) -> Stage:
    """Start the bot on what is stored; ready, first answer, RssAnon before and after the
    first searches (one per channel in ``searched``, the largest first; ``sizes`` their
    message counts) and once their indexes are built. Leaves it running."""
    base = bot.url.removesuffix("/slack/events")
    reads_before = sum(slack.call_counts().get(m, 0) for m in READS)
    spawned = time.perf_counter()
    to_ready, listening_to_ready = start_bot(bot, base)
    assert bot.process is not None
    rss_ready = rss_anon(bot.process.pid)
    # The first answer asks for a word only the largest channel's oldest message holds: an
    # answer that finds it covers everything stored (its chunks, not its echo of the question).
    probe = probe_word(searched[0])
    chunks = json.loads(ask(base, searched[0], f"what about {probe}?")[1])["chunks"]
    to_first = time.perf_counter() - spawned
    finds_oldest = probe in json.dumps(chunks)
    query(base, searched[0], intent)
    for channel in searched[1:]:
        query(base, channel, intent)
    rss_searched = rss_anon(bot.process.pid)
    # Builds run one at a time in the background; the large ones are logged when they end.
    large = [c for c, n in zip(searched, sizes, strict=True) if n >= 100_000]
    built = wait_built(bot, large, timeout=1_800)
    built_after = time.perf_counter() - spawned if built else None
    rss_built = rss_anon(bot.process.pid)
    reader = SqliteChannelStore(bot.data_dir, read_only=True)
    try:
        stored, disk = reader.stats().messages, reader.bytes_on_disk()
    finally:
        reader.close()
    reads = sum(slack.call_counts().get(m, 0) for m in READS) - reads_before
    return Stage(
        stored, disk, to_ready, listening_to_ready, to_first, finds_oldest, rss_ready,
        rss_searched, rss_built, built_after, reads,
    )  # fmt: skip


def latencies(
    bot: BotProcess, channel: str, size: int, intents: Sequence[str], names: Names
) -> dict[str, float]:
    """p50/p95 of one channel's search: through the process, the in-memory ranking on every
    message of the channel, and FTS5 ``bm25()`` top 25 on the same store."""
    base = bot.url.removesuffix("/slack/events")
    # Its index is built again if another channel's build took its room: wait for that.
    rebuilt, logged = not has_index(bot, channel), len(bot_log(bot))
    query(base, channel, intents[0])
    if rebuilt and not wait_built(bot, [channel], 1_800 if size >= 100_000 else 10, logged):
        print(f"{channel}: no build logged, measuring anyway", flush=True)
    served = [query(base, channel, intent) for intent in tqdm(intents, desc="served", disable=None)]
    # The baseline is FTS5's plain bm25() (what search_candidates was before it read row ids).
    reader = PlainBm25Store(bot.data_dir, read_only=True)
    try:
        fts: list[float] = []
        for intent in intents:
            words = [k.word for k in keywords(intent)]
            started = time.perf_counter()
            reader.search_candidates(TEAM, channel, words, 25)
            fts.append(time.perf_counter() - started)
        index = ChannelIndex(channel)
        with index.lock:
            for batch in reader.iter_messages(TEAM, channel):
                for message in batch:
                    index.queue(ts_key(message.ts), message)
            index.refresh(names)
    finally:
        reader.close()
    memory: list[float] = []
    for intent in tqdm(intents, desc="in-memory", disable=None):
        started = time.perf_counter()
        with index.lock:
            search(
                index, intent=intent, authors=(), since=None, names=names, now=None,
                limit=25, per_thread=3,
            )  # fmt: skip
        memory.append(time.perf_counter() - started)
    del index
    out: dict[str, float] = {}
    out["served_p50"], out["served_p95"] = _percentiles(served)
    out["memory_p50"], out["memory_p95"] = _percentiles(memory)
    out["fts_p50"], out["fts_p95"] = _percentiles(fts)
    return out


def search_table_rows(searches: Sequence[tuple[int, dict[str, float]]]) -> str:
    """The rows of the search table (channel size, then each way's p50 / p95 and the ratios)."""
    return "\n".join(
        f"| {size:,} | {r['served_p50'] * 1e3:.1f} / {r['served_p95'] * 1e3:.1f} "
        f"| {r['memory_p50'] * 1e3:.1f} / {r['memory_p95'] * 1e3:.1f} "
        f"| {r['fts_p50'] * 1e3:.1f} / {r['fts_p95'] * 1e3:.1f} "
        f"| {r['served_p50'] / r['memory_p50']:.2f}x | {r['served_p50'] / r['fts_p50']:.2f}x |"
        for size, r in searches
    )


# -- the run -----------------------------------------------------------------------------------


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_served")
    parser.add_argument("--messages", type=int, default=1_500_000, help="in the whole workspace")
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--largest", type=int, default=1_000_000, help="the biggest channel")
    parser.add_argument("--events", type=int, default=20_000, help="signed events for ingest")
    parser.add_argument("--senders", type=int, default=8)
    parser.add_argument("--queries", type=int, default=50, help="intents per channel size")
    parser.add_argument("--dir", type=Path, default=None, help="where to build (on disk)")
    parser.add_argument("--no-write", action="store_true", help="print, leave RESULTS.md")
    args = parser.parse_args(argv)
    root = args.dir or Path(tempfile.mkdtemp(prefix="chanctx-bench-served-"))
    shm = Path(tempfile.mkdtemp(prefix="chanctx-bench-served-", dir="/dev/shm"))
    try:
        rates = run_ingest(root, shm, args.events, args.senders)
        sizes = plan(args.messages, args.channels, args.largest)
        staged, searches, fill_rate = run_stages(root, sizes, args.queries)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    body = report(args, sizes, rates, staged, searches, fill_rate)
    print(body)
    if not args.no_write:
        write_section("Channel store served", body)
    return 0


def run_ingest(root: Path, shm: Path, events: int, senders: int) -> dict[str, float]:
    bodies = ingest_bodies(events, channels=100)
    disk_rate, disk_stored, empty_start = ingest(root / "ingest-disk", bodies, senders, "disk")
    print(f"ingest on disk: {disk_rate:,.0f} events/s, {disk_stored:,} stored", flush=True)
    shm_rate, shm_stored, _ = ingest(shm / "ingest-tmpfs", bodies, senders, "tmpfs")
    print(f"ingest on tmpfs: {shm_rate:,.0f} events/s, {shm_stored:,} stored", flush=True)
    return {"disk": disk_rate, "tmpfs": shm_rate, "events": len(bodies), "empty_start": empty_start,
            "disk_stored": disk_stored, "tmpfs_stored": shm_stored}  # fmt: skip


def run_stages(
    root: Path, sizes: dict[str, int], queries: int
) -> tuple[list[Stage], list[tuple[int, dict[str, float]]], float]:
    data = root / "served" / "data"
    keys = root / "served" / "keys.json"
    data.mkdir(parents=True)
    keys.write_text(json.dumps({KEY: "*"}))
    seeds = {c: n for n, c in enumerate(sizes)}
    corpus = Corpus(seed=11)
    intents = corpus.intents(queries)
    names = Names(users=corpus.users, channels={c: "engineering" for c in sizes})
    staged: list[Stage] = []
    searches: list[tuple[int, dict[str, float]]] = []
    filled: list[str] = []
    fill_seconds = 0.0
    with FakeSlackAPI(slack_state(list(sizes))) as slack, FakeAnthropicAPI() as claude:
        bot = BotProcess(
            data, slack.url, claude.url, extra_args=("--api-keys", str(keys)),
            env={"CHANCTX_LOG_LEVEL": "info"},  # the builds' ends are logged at INFO
        )  # fmt: skip
        try:
            for number, adding in enumerate(stages(sizes)):
                print(f"stage {number}: filling {sum(adding.values()):,} messages", flush=True)
                fill_seconds += fill(data, adding, seeds)
                filled += [c for c in adding if sizes[c] in (10_000, 100_000, max(sizes.values()))]
                searched = sorted(filled, key=lambda c: -sizes[c])
                stage = measure_stage(
                    bot, slack, searched, [sizes[c] for c in searched], intents[0]
                )
                staged.append(stage)
                print(f"stage {number}: {stage}", flush=True)
                if number < len(stages(sizes)) - 1:
                    bot.stop()
            for channel in sorted(filled, key=lambda c: sizes[c]):
                print(f"searching the {sizes[channel]:,}-message channel", flush=True)
                result = latencies(bot, channel, sizes[channel], intents, names)
                searches.append((sizes[channel], result))
                print(f"{sizes[channel]:,}: {result}", flush=True)
        finally:
            bot.stop()
    return staged, searches, sum(sizes.values()) / fill_seconds


def report(
    args: argparse.Namespace,
    sizes: dict[str, int],
    rates: dict[str, float],
    staged: list[Stage],
    searches: list[tuple[int, dict[str, float]]],
    fill_rate: float,
) -> str:
    total = sum(sizes.values())
    largest = max(sizes.values())
    command = (
        f"python -m bench.store_served --messages {total} --channels {len(sizes)} "
        f"--largest {largest} --events {int(rates['events'])} --queries {args.queries}"
    )
    stage_rows = "\n".join(
        f"| {s.stored:,} | {s.disk_bytes / s.stored:,.0f} B | {s.to_ready:.2f} s "
        f"| {s.listening_to_ready:.2f} s | {s.to_first_answer:.2f} s "
        f"| {'yes' if s.finds_oldest else 'no'} | {s.rss_ready / MIB:,.0f} MiB "
        f"| {s.rss_searched / MIB:,.0f} MiB | {s.rss_built / MIB:,.0f} MiB "
        f"| {f'{s.built_after:.0f} s' if s.built_after is not None else 'not logged'} "
        f"| {s.slack_reads} |"
        for s in staged
    )
    search_rows = search_table_rows(searches)
    ratio = rates["disk"] / rates["tmpfs"]
    return f"""
`{command}`: the workspace of "Channel store" ({total:,} messages in {len(sizes)} channels,
the largest {largest:,}), filled stage by stage through `SqliteChannelStore.write` (10,000
events a commit, {fill_rate:,.0f} messages/s here, each channel with the "history" cursor an
import leaves), then served by a real `chanctx run --http` against the loopback fakes.

Ingest over HTTP, {int(rates["events"]):,} signed `message` events from {args.senders}
keep-alive senders over 100 channels into a fresh data dir, each acknowledged only after its
group commit:

| data dir | events/s | stored afterwards |
|---|---:|---:|
| on disk (`synchronous=FULL`: every commit fsynced) | {rates["disk"]:,.0f} | {int(rates["disk_stored"]):,} |
| baseline: tmpfs (/dev/shm; the same process, no disk) | {rates["tmpfs"]:,.0f} | {int(rates["tmpfs_stored"]):,} |

Durable / tmpfs: **{ratio:.2f}x** (target: at least 2,000 events/s). chanctx no longer has a
store-less intake to compare with; tmpfs is the same intake with the disk's cost removed.

Restarts, one after each fill stage (the bot stopped, the stage filled, the bot started on
the data dir, default `--history-mb` of {Options().history_mb}): seconds from spawn to `/readyz` 200 (and from the port opening
to it: the rest is the interpreter importing), from spawn to the first answer, a query API
question in the largest channel for a word only its oldest message holds, and whether that
answer found it (does the first answer cover everything stored?); RssAnon of the process
once ready, right after one query per measured channel, and once the indexes those queries
started are built (builds run in the background, one at a time; a search meanwhile ranks
the held history plus FTS5's matches), with the seconds from spawn until then; and the Slack
history reads the restart spent:

| messages stored | bytes on disk per message | spawn to /readyz 200 | port open to /readyz 200 | spawn to first answer (oldest message) | oldest message found | RssAnon ready | RssAnon after first searches | RssAnon indexes built | spawn to indexes built | Slack reads |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
{stage_rows}

Baseline in the same run: the same process on an empty data dir (the ingest run's first
start) was ready {rates["empty_start"]:.2f} s after spawn; the port opens only once the start's
work is done, so the rest of "spawn to /readyz" is the interpreter importing chanctx on this
loaded machine, and the difference to the baseline is what the stored messages cost a start.

Search in one channel, p50 / p95 in ms, {args.queries} intents each: "served" is the query API
of the running process (`POST /api/context/query`, `type_filters: ["message"]`, JSON: what
`channel_context` returns, HTTP included), once the channel's index is built (a channel
larger than what `--history-mb` leaves it is served in two tiers: its newest part indexed,
`search_candidates`' top 500 for the intent pulled in before each search); "in-memory" is
today's ranking (`tools._search.search`, top 25) on a `ChannelIndex` of every message of the
channel, built in the bench process; "FTS5" is a plain `bm25()` query over the store's FTS5
index, top 25 (`bench.beyond_budget.PlainBm25Store`: what `search_candidates` was before it
read row ids); ratios are served p50 over each.

| channel size | served | in-memory, whole channel | FTS5 bm25() | served / in-memory | served / FTS5 |
|---:|---:|---:|---:|---:|---:|
{search_rows}

{served_finding(staged, searches, rates)}
"""


def served_finding(
    staged: list[Stage], searches: list[tuple[int, dict[str, float]]], rates: dict[str, float]
) -> str:
    """Which targets the run reached, computed so a rerun keeps the words true."""
    last = staged[-1]
    peak = max(max(s.rss_searched, s.rss_built) for s in staged) / MIB
    missed: list[str] = []
    if rates["disk"] < 2_000:
        missed.append(f"ingest {rates['disk']:,.0f} events/s (target 2,000)")
    if peak > 400:
        missed.append(f"RssAnon {peak:,.0f} MiB at most (target 400 MB)")
    if not all(s.finds_oldest for s in staged):
        missed.append(
            "search over everything stored: a first answer after a restart did not find the "
            "largest channel's oldest message"
        )
    if last.to_first_answer - rates["empty_start"] > 5:
        missed.append(
            f"first answer {last.to_first_answer:.1f} s after spawn at {last.stored:,} "
            f"stored, {last.to_first_answer - rates['empty_start']:.1f} s more than an empty "
            "store's start (target 5 s)"
        )
    size, big = searches[-1]
    if big["served_p50"] > 0.010:
        missed.append(f"served p50 {big['served_p50'] * 1e3:.0f} ms at {size:,} (target 10 ms)")
    text = (
        "Targets not reached in this run: " + "; ".join(missed) + "."
        if missed
        else "Every target was reached in this run."
    )
    return text


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
