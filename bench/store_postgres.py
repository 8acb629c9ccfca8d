"""The channel store on PostgreSQL beside the SQLite store, on the same data in the same run.

    python -m bench.store_postgres                          # 100k and 1M, about 30 minutes
    python -m bench.store_postgres --sizes 20000 --queries 20 --no-write   # a few minutes

A real PostgreSQL (Debian's, started like the test suite's: ``initdb`` into a temporary
directory, an unprivileged user, a loopback port, default settings) with ``fsync`` on, as
production runs it, beside a SQLite store (WAL, ``synchronous=FULL``). For each size, one
channel of ``bench.store``'s synthetic engineering chat goes into both stores (PostgreSQL: a
database of its own, the bot's default schema), its oldest message carrying a word only it
holds, with the "history" cursor an import leaves:

* ingest: all but the last 20,000 messages through ``bulk.post_rows`` in batches of 10,000
  (the import path: SQLite's bulk insert, PostgreSQL's COPY), the last 20,000 through
  ``write`` (10,000 events a transaction: group commit's path); messages a second of each;
* the candidates tier: ``search_candidates(..., 200)`` for 200 realistic intents' keywords,
  p50/p95, and (up to ``--recall-up-to`` messages: it needs the whole in-memory ranking of
  the channel, about 12 minutes at 1,000,000) the share of the in-memory ranking's top 10
  that the 200 candidates hold;
* reading the whole channel as an index build reads it (pages of 5,000, newest first);
* served (``bench._pg_served``): a real ``chanctx run --http`` on each store in turn (SQLite
  first, then PostgreSQL through ``--database-url``), default ``--history-mb``: restart to
  ``/readyz`` and to a first answer, Slack reads, then ``--queries`` intents through the query
  API once the channel's index is built, p50/p95, and how often the two stores' answers
  agree;
* with ``--in-process``, also ``channel_context`` in process: a :class:`ContextEngine` over
  each store at the default ``--history-mb``, the tool's steps at its defaults, the same
  intents (as ``bench.store_restart`` times SQLite against issue 26's 10 ms).
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.store_index import PAGE
from chanctx.bot.launch.options import Options
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache import ts_key
from chanctx.cache.channel_store import (
    BackfillCursor,
    ChannelStore,
    CursorSaved,
    MessagePosted,
    PostgresChannelStore,
    SqliteChannelStore,
)
from chanctx.cache.channel_store.bulk import post_rows, row_of
from chanctx.context import Message, Names
from chanctx.tools import IndexedHistory
from chanctx.tools._context_tool import PER_THREAD
from chanctx.tools._index import ChannelIndex
from chanctx.tools._keywords import keywords
from chanctx.tools._search import search

from bench._pg_served import identity_lines, serve_both, served_table, warm
from bench._results import write_section
from bench._timed_search import timed_searches
from bench.search_speed import Corpus
from bench.store import QUERIES, TEAM, FastCorpus
from bench.store_served import probe_word
from tests.support.postgres_server import PostgresServer, postgres_server

SECTION = "Channel store on PostgreSQL"
WRITTEN = 20_000  # the newest messages go in through write(), the rest in bulk
# The in-process search as channel_context runs it by default (what issue 26's 10 ms is about).
LIMIT = 8
STORES = ("sqlite", "pg")


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _fill(store: ChannelStore, channel: str, batches: list[list[Message]]) -> tuple[float, float]:
    """Messages a second through post_rows (all but the last WRITTEN) and through write; then
    the "history" cursor an import leaves, so a bot serves the channel without asking Slack."""
    tail = min(WRITTEN // len(batches[0]), max(1, len(batches) // 5))  # batches via write
    bulk = written = 0.0
    for batch in batches[:-tail]:
        rows = [row_of(m) for m in batch]
        bulk += _timed(lambda: post_rows(store, TEAM, channel, rows))  # noqa: B023
    for batch in batches[-tail:]:
        events = [MessagePosted(TEAM, m) for m in batch]
        written += _timed(lambda: store.write(events))  # noqa: B023
    cursor = BackfillCursor(oldest_ts=batches[0][0].ts, complete=True, updated=time.time())
    store.write([CursorSaved(TEAM, channel, "history", cursor)])
    count = sum(map(len, batches[:-tail]))
    return count / bulk, sum(map(len, batches[-tail:])) / written


def _truth(channel: str, batches: list[list[Message]], intents: list[str]) -> list[list[str]]:
    """The in-memory ranking's top 10 over the whole channel for each intent."""
    names = Names(users=Corpus(0).users, channels={channel: "engineering"})
    index = ChannelIndex(channel)
    out: list[list[str]] = []
    with index.lock:
        for batch in batches:
            for message in batch:
                index.queue(ts_key(message.ts), message)
        index.refresh(names)
        for intent in intents:
            found = search(
                index, intent=intent, authors=(), since=None, names=names, now=None,
                limit=10, per_thread=3,
            )  # fmt: skip
            out.append([hit.message.ts for hit in found.hits])
    del index
    gc.collect()
    return out


def _candidates(
    store: ChannelStore, channel: str, words: list[list[str]], truth: list[list[str]] | None
) -> dict[str, float]:
    store.search_candidates(TEAM, channel, words[0], 200)  # a first connection, a first count
    took: list[float] = []
    shares: list[float] = []
    for n, terms in enumerate(words):
        started = time.perf_counter()
        found = store.search_candidates(TEAM, channel, terms, 200)
        took.append(time.perf_counter() - started)
        if truth is not None and truth[n]:
            pool = {c.ts for c in found}
            shares.append(sum(ts in pool for ts in truth[n]) / len(truth[n]))
    p50, p95 = _percentiles(took)
    return {"cand_p50": p50, "cand_p95": p95, "recall": statistics.mean(shares) if shares else -1}


def _pages(store: ChannelStore, channel: str) -> Iterator[list[Message]]:
    latest: str | None = None
    while True:
        page = store.messages(TEAM, channel, limit=PAGE, latest=latest)
        yield page
        if len(page) < PAGE:
            return
        latest = page[0].ts


def _served(store: ChannelStore, channel: str, budget: int, intents: list[str]) -> dict[str, float]:
    """A restarted bot's engine over ``store``: its index build, then its searches."""
    opened = OpenStore(store)
    engine = ContextEngine(
        me=SelfIdentity(),
        names=Names(),
        history=IndexedHistory(max_bytes=budget),
        record=ChannelRecord(opened, TEAM),
        settings=ContextSettings(max_wait_seconds=10.0),
    )
    assert engine.indexes is not None
    started = time.perf_counter()
    # Answers do not wait for a large build: the bench does.
    if not engine.indexes.wait_built(channel, 3_600.0)[0]:
        raise SystemExit(f"{channel}: no index built in the bench process in an hour")
    build = time.perf_counter() - started
    indexed = engine.indexes.indexed(channel)
    if not indexed:
        raise SystemExit(f"{channel}: its index build failed (see the log)")
    names = Names(users=Corpus(0).users, channels={channel: "engineering"})
    took = timed_searches(engine, channel, intents, names, limit=LIMIT, per_thread=PER_THREAD)
    p50, p95 = _percentiles(took)
    del engine
    gc.collect()
    return {"build_ip": build, "indexed_ip": indexed, "served_p50": p50, "served_p95": p95}


def measure(
    size: int,
    pg: PostgresChannelStore,
    sqlite_dir: Path,
    *,
    recall: bool,
    settle: Callable[[], None],
    in_process: bool,
) -> dict[str, float]:
    """One size: fill both stores, then ask both the same things. ``settle`` runs
    PostgreSQL's VACUUM ANALYZE after its fill (what autovacuum does within a minute or two of
    a bulk load; searches before it run several times slower: the planner has no statistics
    and every first read of a fresh row writes its hint bits)."""
    channel = _channel(size)
    batches = list(FastCorpus(seed=size).messages(channel, size))
    oldest = batches[0][0]  # carries a word only it holds: a restart's first answer asks for it
    batches[0][0] = oldest.model_copy(update={"text": f"{oldest.text} {probe_word(channel)}"})
    budget = Options().history_mb * 2**20  # the bot's default, as bench.store_restart's
    sqlite = SqliteChannelStore(sqlite_dir)
    stores: dict[str, ChannelStore] = {"sqlite": sqlite, "pg": pg}
    row: dict[str, float] = {"size": size}
    for name, store in stores.items():
        row[f"{name}_bulk"], row[f"{name}_write"] = _fill(store, channel, batches)
        print(f"{size:,}: {name} filled", flush=True)
    row["pg_settle"] = _timed(settle)
    intents = Corpus(seed=11).intents(QUERIES)
    words = [[k.word for k in keywords(intent)] for intent in intents]
    truth = _truth(channel, batches, intents) if recall else None
    del batches
    gc.collect()
    for name, store in stores.items():
        for key, value in _candidates(store, channel, words, truth).items():
            row[f"{name}_{key}"] = value
        row[f"{name}_read"] = _timed(lambda: sum(map(len, _pages(store, channel))))  # noqa: B023
        print(f"{size:,}: {name} candidates {row}", flush=True)
    for name, store in stores.items():
        if not in_process:
            break
        for key, value in _served(store, channel, budget, intents).items():
            row[f"{name}_{key}"] = value
        print(f"{size:,}: {name} served {row}", flush=True)
    sqlite.close()
    return row


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_postgres")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--recall-up-to", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50, help="intents asked of each bot")
    parser.add_argument(
        "--in-process", action="store_true",
        help="also the in-process ContextEngine search at a quarter of the channel's bytes",
    )  # fmt: skip
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="chanctx-bench-pg-"))
    server = postgres_server(Path(tempfile.mkdtemp(prefix="chanctx-bench-pg-server-")), fsync=True)
    rows: list[dict[str, float]] = []
    started = time.perf_counter()
    intents = Corpus(seed=11).intents(args.queries)
    try:
        warm(workdir)
        for size in args.sizes:
            url = _database(server, size)
            pg = PostgresChannelStore(url, statement_timeout=600.0)  # the bot's own schema
            try:
                row = measure(
                    size, pg, workdir / f"sqlite-{size}" / "data",
                    recall=size <= args.recall_up_to, settle=lambda: _vacuum(url),  # noqa: B023
                    in_process=args.in_process,
                )  # fmt: skip
            finally:
                pg.close()
            row |= serve_both(workdir, _channel(size), size, intents, url)
            rows.append(row)
            print(f"{size:,}: {row}", flush=True)
            shutil.rmtree(workdir / f"sqlite-{size}", ignore_errors=True)  # the disk for the next
            if not args.no_write:  # each size as it is done: a long run keeps what it measured
                write_section(SECTION, report(rows, time.perf_counter() - started, args))
    finally:
        server.stop("fast")
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(server.workdir, ignore_errors=True)
    print(report(rows, time.perf_counter() - started, args))
    return 0


def _channel(size: int) -> str:
    return f"C{size:09d}P"


def _database(server: PostgresServer, size: int) -> str:
    """A database of its own for each size (the bot opens the default schema, ``chanctx``)."""
    with server.admin() as conn:
        conn.execute(f"CREATE DATABASE bench_{size}")
    return server.url.rsplit("/", 1)[0] + f"/bench_{size}"


def _vacuum(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE chanctx.messages")


def _pair(r: dict[str, float], key: str, scale: float = 1e3, digits: int = 0) -> str:
    return " / ".join(f"{r[f'{s}_{key}'] * scale:,.{digits}f}" for s in STORES)


def report(rows: list[dict[str, float]], seconds: float, args: argparse.Namespace) -> str:
    sizes = " ".join(str(int(r["size"])) for r in rows)
    command = f"python -m bench.store_postgres --sizes {sizes} --queries {args.queries}" + (
        " --in-process" if args.in_process else ""
    )
    lines = [
        f"`{command}`: one channel of each size (bench.store's synthetic engineering chat) in "
        "both stores in the same run: PostgreSQL on loopback (the suite's server, default "
        "settings, fsync on) and SQLite (WAL, synchronous=FULL).",
        "",
        f"Served: a real `chanctx run --http` on each store in turn at each size (SQLite: its "
        "data dir holds the store; PostgreSQL: `--database-url`, an empty data dir), default "
        f"`--history-mb` ({Options().history_mb}), against the loopback fakes, bytecode cached "
        "as installed. The restart is `bench.store_restart`'s: seconds from spawn to "
        "`/readyz` 200 and to a first answer, a query API question for a word only the "
        "channel's oldest message holds; RssAnon after it. Then the bot is started once more, "
        "asked once (its index build starts), and once the log says the index is built (the "
        "newest messages that fit `--history-mb`; older ones come from `search_candidates` "
        f"before each search) asked {args.queries} intents through the query API "
        '(`POST /api/context/query`, JSON, `type_filters: ["message"]`, HTTP included). '
        "Slack history reads count both starts.",
        "",
        *served_table(rows),
        "",
        "The same intents' answers from the two stores: the first 10 blocks' ids (identical: "
        "the same blocks in the same order). The ranking code is the same; a difference comes "
        "from the candidates query (FTS5's `bm25()` against PostgreSQL's full text).",
        "",
        *identity_lines(rows),
        "",
        "Ingest and candidates, each cell **SQLite / PostgreSQL**: all but the newest "
        f"{WRITTEN:,} messages through `bulk.post_rows` (10,000 a transaction: SQLite's bulk "
        "insert, PostgreSQL's COPY), the newest through `write` (10,000 events a transaction); "
        "then PostgreSQL's `VACUUM ANALYZE` of the table (what autovacuum does after a bulk "
        "load). Candidates: `search_candidates(..., 200)` for 200 intents' keywords; recall = "
        "the share of the in-memory ranking's top 10 (whole channel) the 200 hold. Read: the "
        "whole channel in pages of 5,000, newest first, as an index build reads it.",
        "",
        "| messages | ingest bulk (msg/s) | ingest write (msg/s) | candidates p50 (ms) | "
        "candidates p95 (ms) | recall@10 of candidates | read whole channel (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        recall = (
            f"{r['sqlite_recall']:.3f} / {r['pg_recall']:.3f}" if r["pg_recall"] >= 0 else "not run"
        )
        lines.append(
            f"| {int(r['size']):,} | {_pair(r, 'bulk', 1)} | {_pair(r, 'write', 1)} | "
            f"{_pair(r, 'cand_p50', digits=1)} | {_pair(r, 'cand_p95', digits=1)} | {recall} | "
            f"{_pair(r, 'read', 1, 1)} |"
        )
    settles = ", ".join(f"{r['pg_settle']:.1f} s at {int(r['size']):,}" for r in rows)
    lines += ["", f"PostgreSQL's VACUUM ANALYZE after the fill: {settles}."]
    if args.in_process:
        lines += [
            "",
            "In process: a `ContextEngine` over each store at the default `--history-mb` "
            f"({Options().history_mb} MiB, as `bench.store_restart` times SQLite): the index "
            "built from the store, then `channel_context`'s steps at its defaults (the index "
            f"brought up to date for the intent, older matches pulled in, the top {LIMIT}, "
            f"{PER_THREAD} a thread) for the same {args.queries} intents; what issue 26's "
            "10 ms at 1,000,000 is about.",
            "",
            "| messages | indexed | index build (s) | search p50 (ms) | search p95 (ms) |",
            "|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            lines.append(
                f"| {int(r['size']):,} | {_pair(r, 'indexed_ip', 1)} | "
                f"{_pair(r, 'build_ip', 1, 1)} | {_pair(r, 'served_p50', digits=1)} | "
                f"{_pair(r, 'served_p95', digits=1)} |"
            )
    lines += ["", f"Run time {seconds:.0f} s."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
