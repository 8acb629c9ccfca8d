"""``python -m bench beyond_budget``: a channel larger than ``--history-mb`` answered in two tiers
(its newest part indexed in memory, the older part reached through ``search_candidates``), with
today's candidates against FTS5's plain ``bm25()`` top 500 (what ``search_candidates`` was
before), in one run on one store.

    python -m bench beyond_budget [--largest 1000000] [--queries 20] [--dir DIR] [--no-write]

One channel of ``--largest`` messages (``bench.store``'s synthetic chat, written with the bulk
writer; ``--dir`` keeps the store and reuses it on the next run). For each way, a new engine
over the store (empty caches: a restart) at the default ``--history-mb`` of 256 answers the
query API's question (``run_query``, what ``POST /api/context/query`` runs, without the HTTP):

* the first answers after the restart, while the channel's index is being built (each waits
  for the build at most ``BUILD_WAIT``, then ranks the interim index: the newest held messages
  plus the store's candidates);
* once the index is built: ``--queries`` intents, each new (its older matches pulled into the
  index), then the same intents again (nothing left to pull);
* the candidates query alone on the same store.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chanctx.bot.core.built_context import ContextSettings
from chanctx.bot.core.channel_record import ChannelRecord, OpenStore
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.store_index import BUILD_WAIT, CANDIDATES
from chanctx.bot.server.queries import QueryBody, run_query
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.cache import ts_key
from chanctx.cache.channel_store import SqliteChannelStore
from chanctx.cache.channel_store._fts import scoped_query, shard_table
from chanctx.cache.channel_store._records import Candidate
from chanctx.cache.channel_store.bulk import message_row, post_rows
from chanctx.context import Names
from chanctx.tools import IndexedHistory
from chanctx.tools._keywords import keywords

from bench._results import write_section
from bench.search_speed import Corpus
from bench.store import TEAM, FastCorpus

CHANNEL = "C0BEYOND01"
FIRST = 5  # answers timed right after the restart, while the build runs


class PlainBm25Store(SqliteChannelStore):
    """The store with ``search_candidates`` as it was: FTS5's ``bm25()`` over every match of
    any term, each shard's best ``limit``, then the best of those; with ``before``, the best
    :data:`CANDIDATES` of the channel, the newer dropped, then at most ``limit`` of them (a
    large index now asks for a few older ones; this store then answers from the same 500)."""

    def search_candidates(
        self,
        team: str,
        channel: str,
        terms: Sequence[str],
        limit: int,
        *,
        before: str | None = None,
    ) -> list[Candidate]:
        chan = self._chan(team, channel)
        query = scoped_query(chan, terms) if chan is not None else None
        if chan is None or query is None or limit <= 0:
            return []
        asked = limit if before is None else max(limit, CANDIDATES)
        shards = [
            s for (s,) in self._query("SELECT shard FROM chan_shards WHERE chan = ?", (chan,))
        ]
        parts = [
            f"SELECT m.ts, f.rank FROM (SELECT rowid, rank FROM {t} WHERE {t} MATCH ?1 "
            f"ORDER BY rank LIMIT {int(asked)}) f JOIN messages m ON m.id = f.rowid "
            "WHERE m.chan = ?2"
            for t in map(shard_table, shards)
        ]
        if not parts:
            return []
        found = self._query(
            f"SELECT rank, ts FROM ({' UNION ALL '.join(parts)}) ORDER BY rank LIMIT {int(asked)}",
            (query, chan),
        )
        best = [Candidate(str(ts), -float(rank)) for rank, ts in found]
        older = None if before is None else ts_key(before)  # the best, those older than it
        return best if older is None else [c for c in best if ts_key(c.ts) < older][:limit]


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def fill(data: Path, size: int) -> None:
    store = SqliteChannelStore(data)
    try:
        for batch in FastCorpus(seed=0).messages(CHANNEL, size):
            rows = [
                message_row(m.ts, thread_ts=m.thread_ts, user_id=m.user_id, text=m.text)
                for m in batch
            ]
            post_rows(store, TEAM, CHANNEL, rows)
    finally:
        store.close()


def measure(data: Path, store_type: type[SqliteChannelStore], intents: list[str]) -> dict[str, Any]:
    names = Names(users=Corpus(seed=11).users)
    opened = OpenStore(store_type(data, read_only=True))
    try:
        engine = ContextEngine(
            me=SelfIdentity(),
            names=names,
            history=IndexedHistory(max_bytes=256 * 2**20),
            record=ChannelRecord(opened, TEAM),
            settings=ContextSettings(max_wait_seconds=10.0),
        )
        assert engine.indexes is not None

        def ask(intent: str) -> float:
            body = QueryBody(query=intent, channel=CHANNEL, format="json", type_filters=["message"])
            started = time.perf_counter()
            run_query(engine, body)
            return time.perf_counter() - started

        restarted = time.perf_counter()
        first = [ask(intent) for intent in intents[:FIRST]]
        while not engine.indexes.indexed(CHANNEL):
            time.sleep(0.5)
        built = time.perf_counter() - restarted
        fresh = [ask(intent) for intent in intents]
        again = [ask(intent) for intent in intents]
        store = opened.store
        alone: list[float] = []
        for intent in intents:
            words = [k.word for k in keywords(intent)]
            started = time.perf_counter()
            store.search_candidates(TEAM, CHANNEL, words, CANDIDATES)
            alone.append(time.perf_counter() - started)
        indexed = engine.indexes.indexed(CHANNEL)
    finally:
        opened.close()
    return {
        "first": _percentiles(first),
        "fresh": _percentiles(fresh),
        "again": _percentiles(again),
        "alone": _percentiles(alone),
        "built": built,
        "indexed": indexed,
    }


def main(argv: Sequence[str] = ()) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench beyond_budget")
    parser.add_argument("--largest", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=None, help="keep the store here, reuse it")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    root = args.dir or Path(tempfile.mkdtemp(prefix="chanctx-beyond-"))
    data = root / f"store-{args.largest}"
    try:
        if not (data / "channels.sqlite3").exists():
            data.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            fill(data, args.largest)
            print(f"filled {args.largest:,} in {time.perf_counter() - started:.0f} s", flush=True)
        intents = Corpus(seed=11).intents(args.queries)
        rows: dict[str, dict[str, Any]] = {}
        for label, kind in (("today", SqliteChannelStore), ("bm25() top 500", PlainBm25Store)):
            rows[label] = measure(data, kind, intents)
            print(label, rows[label], flush=True)
            gc.collect()
    finally:
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    body = report(args, rows)
    print(body)
    if not args.no_write:
        write_section("Search beyond the budget", body)


def report(args: argparse.Namespace, rows: dict[str, dict[str, Any]]) -> str:
    today, before = rows["today"], rows["bm25() top 500"]

    def cell(pair: tuple[float, float]) -> str:
        return f"{pair[0]:,.1f} / {pair[1]:,.1f}"

    lines = [
        f"`python -m bench beyond_budget --largest {args.largest} --queries {args.queries}`: one",
        f"channel of {args.largest:,} messages (`bench.store`'s synthetic chat), larger than the",
        "default `--history-mb` of 256, so it is answered in two tiers: its newest",
        f"{today['indexed']:,} messages indexed in memory, the older ones reached through",
        f"`search_candidates` (top {CANDIDATES}). Each way is a new engine over the same store (a",
        "restart) answering the query API's question in process (`run_query`, JSON, messages",
        f"only; no HTTP): the first {FIRST} answers while the index is built (each waits for the",
        f"build {BUILD_WAIT:.0f} s, then ranks the interim index), then {args.queries} new intents",
        "once it is built, the same again, and the candidates query alone. p50 / p95 in ms.",
        "",
        "| | today's candidates | FTS5 bm25() top 500 (before) | before / today (p50) |",
        "|---|---:|---:|---:|",
    ]
    for key, label in (
        ("first", f"first {FIRST} answers after the restart (build running)"),
        ("fresh", "answers once built, new intents"),
        ("again", "answers once built, the same intents again"),
        ("alone", "`search_candidates` alone"),
    ):
        ratio = before[key][0] / today[key][0] if today[key][0] else float("nan")
        lines.append(f"| {label} | {cell(today[key])} | {cell(before[key])} | {ratio:.1f}x |")
    lines += [
        f"| restart to index built (s) | {today['built']:.0f} | {before['built']:.0f} | |",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
