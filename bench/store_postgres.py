"""The channel store on PostgreSQL beside the SQLite store, on the same data in the same run.

    python -m bench.store_postgres                          # 100k and 1M, about 30 minutes
    python -m bench.store_postgres --sizes 10000 100000     # a few minutes

A real PostgreSQL (Debian's, started like the test suite's: ``initdb`` into a temporary
directory, an unprivileged user, a loopback port, default settings) with ``fsync`` on, as
production runs it, beside a SQLite store (WAL, ``synchronous=FULL``). For each size, one
channel of ``bench.store``'s synthetic engineering chat goes into both stores:

* ingest: all but the last 20,000 messages through ``bulk.post_rows`` in batches of 10,000
  (the import path: SQLite's bulk insert, PostgreSQL's COPY), the last 20,000 through
  ``write`` (10,000 events a transaction: group commit's path); messages a second of each;
* the candidates tier: ``search_candidates(..., 200)`` for 200 realistic intents' keywords,
  p50/p95, and (up to ``--recall-up-to`` messages: it needs the whole in-memory ranking of
  the channel, about 12 minutes at 1,000,000) the share of the in-memory ranking's top 10
  that the 200 candidates hold;
* reading the whole channel as an index build reads it (pages of 5,000, newest first);
* the served search: a :class:`ContextEngine` over each store (as after a restart) whose byte
  budget (``--history-mb``) is a quarter of the channel's bytes, so the index holds the
  newest part and every search also pulls the older matches through ``search_candidates``
  (500): the seconds to build that index from each store, then ``channel_context``'s search
  for 100 intents, p50/p95.
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
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache import message_bytes, ts_key
from chanctx.cache.channel_store import (
    ChannelStore,
    MessagePosted,
    PostgresChannelStore,
    SqliteChannelStore,
)
from chanctx.cache.channel_store.bulk import post_rows, row_of
from chanctx.context import Message, Names
from chanctx.tools import IndexedHistory
from chanctx.tools._index import ChannelIndex
from chanctx.tools._keywords import keywords
from chanctx.tools._search import search

from bench._results import write_section
from bench.search_speed import Corpus
from bench.store import QUERIES, TEAM, FastCorpus
from tests.support.postgres_server import postgres_server

SECTION = "Channel store on PostgreSQL"
WRITTEN = 20_000  # the newest messages go in through write(), the rest in bulk
SERVED = 100  # intents asked of the served search
STORES = ("sqlite", "pg")


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _fill(store: ChannelStore, channel: str, batches: list[list[Message]]) -> tuple[float, float]:
    """Messages a second through post_rows (all but the last WRITTEN) and through write."""
    tail = min(WRITTEN // len(batches[0]), max(1, len(batches) // 5))  # batches via write
    bulk = written = 0.0
    for batch in batches[:-tail]:
        rows = [row_of(m) for m in batch]
        bulk += _timed(lambda: post_rows(store, TEAM, channel, rows))  # noqa: B023
    for batch in batches[-tail:]:
        events = [MessagePosted(TEAM, m) for m in batch]
        written += _timed(lambda: store.write(events))  # noqa: B023
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
        settings=ContextSettings(max_wait_seconds=3_600.0),  # wait for the whole build
    )
    started = time.perf_counter()
    scope = engine.search_scope(channel, hidden=frozenset(), held=frozenset())
    build = time.perf_counter() - started
    assert scope is not None
    indexed = len(scope.index)
    names = Names(users=Corpus(0).users, channels={channel: "engineering"})
    took: list[float] = []
    for intent in intents:
        started = time.perf_counter()
        scope = engine.search_scope(channel, hidden=frozenset(), held=frozenset())
        assert scope is not None
        with scope.index.lock:
            scope.prepare(intent, names)
            search(
                scope.index, intent=intent, authors=(), since=None, names=names, now=None,
                limit=25, per_thread=3,
            )  # fmt: skip
        took.append(time.perf_counter() - started)
    p50, p95 = _percentiles(took)
    del engine, scope
    gc.collect()
    return {"build": build, "indexed": indexed, "served_p50": p50, "served_p95": p95}


def measure(
    size: int,
    pg: PostgresChannelStore,
    sqlite_dir: Path,
    *,
    recall: bool,
    settle: Callable[[], None],
) -> dict[str, float]:
    """One size: fill both stores, then ask both the same things. ``settle`` runs
    PostgreSQL's VACUUM ANALYZE after its fill (what autovacuum does within a minute or two of
    a bulk load; searches before it run several times slower: the planner has no statistics
    and every first read of a fresh row writes its hint bits)."""
    channel = f"C{size:09d}P"
    batches = list(FastCorpus(seed=size).messages(channel, size))
    budget = sum(message_bytes(m) for b in batches for m in b) // 4
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
        for key, value in _served(store, channel, budget, intents[:SERVED]).items():
            row[f"{name}_{key}"] = value
        print(f"{size:,}: {name} served {row}", flush=True)
    sqlite.close()
    return row


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.store_postgres")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--recall-up-to", type=int, default=100_000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="chanctx-bench-pg-"))
    server = postgres_server(Path(tempfile.mkdtemp(prefix="chanctx-bench-pg-server-")), fsync=True)
    rows: list[dict[str, float]] = []
    started = time.perf_counter()
    try:
        pg = PostgresChannelStore(server.url, schema="bench", statement_timeout=600.0)
        for size in args.sizes:
            row = measure(
                size, pg, workdir / f"sqlite-{size}", recall=size <= args.recall_up_to,
                settle=lambda: _vacuum(server.url),
            )  # fmt: skip
            rows.append(row)
            print(f"{size:,}: {row}", flush=True)
            if not args.no_write:  # each size as it is done: a long run keeps what it measured
                write_section(SECTION, report(rows, time.perf_counter() - started))
        pg.close()
    finally:
        server.stop("fast")
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(server.workdir, ignore_errors=True)
    print(report(rows, time.perf_counter() - started))
    return 0


def _vacuum(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE bench.messages")


def _pair(r: dict[str, float], key: str, scale: float = 1e3, digits: int = 0) -> str:
    return " / ".join(f"{r[f'{s}_{key}'] * scale:,.{digits}f}" for s in STORES)


def report(rows: list[dict[str, float]], seconds: float) -> str:
    lines = [
        "`python -m bench.store_postgres`: one channel of each size (bench.store's synthetic "
        "engineering chat) in both stores in the same run: PostgreSQL 15 on loopback (the "
        "suite's server, default settings, fsync on) and SQLite (WAL, synchronous=FULL). Each "
        "cell is **SQLite / PostgreSQL**.",
        "",
        f"Ingest: all but the newest {WRITTEN:,} messages through `bulk.post_rows` (10,000 a "
        "transaction: SQLite's bulk insert, PostgreSQL's COPY), the newest through `write` "
        "(10,000 events a transaction); then PostgreSQL's `VACUUM ANALYZE` of the table "
        "(what autovacuum does after a bulk load; its seconds are below). Candidates: `search_candidates(..., 200)` for 200 "
        "intents' keywords; recall = the share of the in-memory ranking's top 10 (whole "
        "channel) the 200 hold. Read: the whole channel in pages of 5,000, newest first, as an "
        "index build reads it.",
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
    lines += [
        "",
        f"PostgreSQL's VACUUM ANALYZE after the fill: {settles}. Before it, the first "
        "searches of a freshly loaded channel ran several times slower (measured by hand at "
        "20,000 messages: p95 0.8-1.1 s against 0.04-0.12 s after it): the planner has no "
        "statistics yet and the first read of each new row writes its hint bits.",
        "",
        f"Served search: a `ContextEngine` over each store, as after a restart, its byte budget "
        "(`--history-mb`) a quarter of the channel's bytes: the index is built from the store "
        "(the newest messages that fit), then `channel_context`'s search (top 25) for "
        f"{SERVED} intents, each pulling the older matches through `search_candidates` (500) "
        "before ranking.",
        "",
        "| messages | indexed | index build (s) | served search p50 (ms) | served search p95 (ms) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {int(r['size']):,} | {_pair(r, 'indexed', 1)} | {_pair(r, 'build', 1, 1)} | "
            f"{_pair(r, 'served_p50', digits=1)} | {_pair(r, 'served_p95', digits=1)} |"
        )
    lines += [
        "",
        f"Run time {seconds:.0f} s. The machine's 2 cores were shared with other work during "
        "the run: the latencies are noisy; compare within a row, where both stores ran side "
        "by side.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
