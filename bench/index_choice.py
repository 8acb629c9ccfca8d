"""Which index serves a channel's search from disk, measured on the same messages and intents in
one run: SQLite FTS5 as the candidate generator (the channel store's ``search_candidates``), the
``tantivy`` package (BM25 top 200), or the in-memory ``ChannelIndex`` saved to disk and loaded
back (a format of this bench only, checked to answer as the index it was saved from).

    python -m bench index_choice [--messages 1000000] [--queries 50] [--no-write]

One channel of ``bench.store``'s synthetic chat, one message (half way) carrying a planted word.
Per index: build time, bytes on disk, the restart to a first search, the candidates' p50/p95 and
their recall of the whole channel's in-memory top 10, and what deleting the planted message costs
and whether its word is then gone from the files' bytes (read back and searched, the word and
its reverse: tantivy's term dictionary stores keys reversed). The report says the rest.
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import tantivy
from chanctx.cache import ts_key
from chanctx.cache.channel_store import MessageDeleted, SqliteChannelStore
from chanctx.cache.channel_store.bulk import message_row, post_rows
from chanctx.context import Message, Names
from chanctx.tools import ChannelIndex
from chanctx.tools._columns import KeyBlocks, Rows, Threads
from chanctx.tools._keywords import keywords
from chanctx.tools._search import search
from tqdm import tqdm

from bench._results import write_section
from bench.search_speed import Corpus
from bench.store import BATCH, TEAM, FastCorpus

CHANNEL = "C0INDEXCH01"
PLANTED = "xyzzyquokkafjord"  # in one message only; porter and en_stem leave it as it is
TOP, CANDIDATES, PER_THREAD = 10, 200, 3
PAGE = 5_000  # store_index.PAGE: what the bot's build reads at a time
WRITER_HEAP = 128 * 2**20
Ask = Callable[[list[str]], list[int]]  # keywords -> the candidates' ts keys, best first
Keys = list[list[int]]  # per intent, ts keys


def load() -> str:  # the 1-minute load average, written beside every number
    return f"{os.getloadavg()[0]:.2f}"


def percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(0.95 * (len(ordered) - 1))] * 1e3


def messages(size: int) -> Iterator[list[Message]]:
    """The channel's messages in batches, the same each call; the middle one has PLANTED."""
    made = 0
    for batch in FastCorpus(seed=0).messages(CHANNEL, size):
        at = size // 2 - made
        if 0 <= at < len(batch):
            batch[at] = batch[at].model_copy(update={"text": f"{batch[at].text} {PLANTED}"})
        made += len(batch)
        yield batch


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def holding(path: Path) -> str:
    """The kinds of file under ``path`` whose bytes hold the planted word (or its reverse)."""
    word, files = PLANTED.encode(), [p for p in path.rglob("*") if p.is_file()]
    found = {p.suffix for p in files if word in (b := p.read_bytes()) or word[::-1] in b}
    return ", ".join(sorted(found))


def recall(tops: Keys, found: Keys) -> float:
    """The mean share of each top (empty ones left out) that its candidates hold."""
    shares = [len(set(t) & set(c)) / len(t) for t, c in zip(tops, found, strict=True) if t]
    return statistics.mean(shares) if shares else float("nan")


@dataclass
class Way:
    """What one index measured."""

    build: float = 0.0  # seconds to fill / build
    bytes: int = 0
    reopen: float = 0.0  # seconds from a restart to the first search answered
    search: tuple[float, float] = (0.0, 0.0)  # ms p50 / p95
    recall: float = float("nan")
    delete: float = 0.0
    held: dict[str, str] = field(default_factory=dict)  # step -> the files holding the word
    notes: dict[str, Any] = field(default_factory=dict)


def fill_store(data: Path, size: int) -> tuple[float, str]:
    """Fill the store; (seconds in post_rows, the planted message's ts)."""
    store = SqliteChannelStore(data)
    took, planted = 0.0, ""
    for batch in tqdm(messages(size), total=-(-size // BATCH), desc="fill SQLite", disable=None):
        planted = next((m.ts for m in batch if PLANTED in m.text), planted)
        rows = [
            message_row(m.ts, thread_ts=m.thread_ts, user_id=m.user_id, text=m.text) for m in batch
        ]
        started = time.perf_counter()
        post_rows(store, TEAM, CHANNEL, rows)
        took += time.perf_counter() - started
    store.close()
    return took, planted


def fts5_asker(data: Path, opened: ExitStack) -> Ask:
    store = SqliteChannelStore(data, read_only=True)
    opened.callback(store.close)
    return lambda words: [
        ts_key(c.ts) for c in store.search_candidates(TEAM, CHANNEL, words, CANDIDATES)
    ]


def measure(way: Way, first: Callable[[], Ask], asks: list[list[str]], tops: Keys) -> None:
    """Open after a restart and answer once (timed), then each intent's candidates."""
    started = time.perf_counter()
    ask = first()
    ask(asks[0])
    way.reopen = time.perf_counter() - started
    took, found = [], []
    for words in asks:
        started = time.perf_counter()
        found.append(ask(words))
        took.append(time.perf_counter() - started)
    way.search, way.recall, way.notes["load"] = percentiles(took), recall(tops, found), load()


def delete_fts5(data: Path, way: Way, planted: str) -> None:
    way.held["before"] = holding(data)
    store = SqliteChannelStore(data)
    started = time.perf_counter()
    store.write([MessageDeleted(TEAM, CHANNEL, planted)])
    way.delete = time.perf_counter() - started
    way.held["after the deletion"] = holding(data)
    store.close()
    way.notes["delete load"] = load()


def tantivy_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("key", stored=True, indexed=True, fast=True)
    builder.add_text_field("text", stored=True, tokenizer_name="en_stem")
    builder.add_text_field("author", stored=True, tokenizer_name="en_stem")
    return builder.build()


def build_tantivy(path: Path, size: int, names: Names) -> float:
    """Index every message, a commit per batch as the store; seconds (merges waited for)."""
    index = tantivy.Index(tantivy_schema(), str(path))
    took, writer = 0.0, index.writer(WRITER_HEAP, 1)
    for batch in tqdm(messages(size), total=-(-size // BATCH), desc="tantivy", disable=None):
        docs = [(ts_key(m.ts), m.text, names.users.get(m.user_id or "", "")) for m in batch]
        started = time.perf_counter()
        for key, text, author in docs:
            writer.add_document(tantivy.Document(key=key, text=text, author=author))
        writer.commit()
        took += time.perf_counter() - started
    started = time.perf_counter()
    writer.wait_merging_threads()
    return took + time.perf_counter() - started


def tantivy_query(index: tantivy.Index, words: list[str]) -> tantivy.Query | None:
    phrases = [w.replace("\\", " ").replace('"', " ").strip() for w in words]
    text = " OR ".join(f'"{p}"' for p in phrases if p)
    return index.parse_query(text, ["text", "author"]) if text else None


def tantivy_asker(path: Path) -> Ask:
    index = tantivy.Index.open(str(path))

    def ask(words: list[str]) -> list[int]:
        query = tantivy_query(index, words)
        if query is None:
            return []
        searcher = index.searcher()
        hits = searcher.search(query, CANDIDATES, count=False).hits
        return [int(k) for k in searcher.fast_field_values("key", [addr for _, addr in hits])]

    return ask


def delete_tantivy(path: Path, way: Way, planted: str) -> None:
    """Delete the planted document by its key, then collect the unused files, then wait for
    the merges: after each step, is the word still in the files (and in the term index)?"""
    index = tantivy.Index.open(str(path))
    way.held["before"] = holding(path)
    writer = index.writer(WRITER_HEAP, 1)
    started = time.perf_counter()
    writer.delete_documents_by_term("key", ts_key(planted))
    writer.commit()
    way.delete = time.perf_counter() - started
    way.held["after the deletion"] = holding(path)
    writer.garbage_collect_files()
    way.held["after garbage_collect_files"] = holding(path)
    writer.wait_merging_threads()
    way.held["after the merges"] = holding(path)
    index.reload()
    searcher = index.searcher()
    way.notes["doc_freq after"] = searcher.doc_freq("text", PLANTED)
    way.notes["hits after"] = len(searcher.search(index.parse_query(PLANTED, ["text"])).hits)
    way.notes["delete load"] = load()


def build_from_store(data: Path, names: Names) -> tuple[ChannelIndex, float, float]:
    """The whole channel's index as the bot builds it; (index, read seconds, index seconds)."""
    store = SqliteChannelStore(data, read_only=True)
    started = time.perf_counter()
    taken: list[Message] = []
    latest: str | None = None
    while True:  # pages oldest first within, newest page first
        page = store.messages(TEAM, CHANNEL, limit=PAGE, latest=latest)
        fresh = page if latest is None else [m for m in page if m.ts != latest]
        taken.extend(reversed(fresh))
        if len(page) < PAGE or not fresh:
            break
        latest = page[0].ts
    store.close()
    read = time.perf_counter() - started
    taken.reverse()
    index = ChannelIndex(CHANNEL)
    started = time.perf_counter()
    with index.lock:
        for message in tqdm(taken, unit="msg", desc="index from store", disable=None):
            index.upsert(message, names)
    return index, read, time.perf_counter() - started


# Attributes a saved index does not need: locks, work arrays, what is pending or remembered.
_TRANSIENT = {"lock", "scratch", "_pending", "_pending_lock", "_synced", "_ids", "_window"}
_TRANSIENT.add("_whole")
_REBUILT = {"rows", "threads", "bm25", "_messages", "_slot_of", "_top_keys", "_tid_of"}


def save_index(index: ChannelIndex, path: Path) -> None:
    """Columns and postings as .npy files, the rest in one pickle."""
    path.mkdir(parents=True)
    for prefix, columns in (("rows", index.rows), ("threads", index.threads)):
        for name, column in vars(columns).items():
            np.save(path / f"{prefix}.{name}.npy", column)
    index.bm25._compact()  # a removed message's terms leave the flat list (and the file)
    bm25 = vars(index.bm25)
    postings: dict[str, Any] = bm25["_postings"]
    vocabulary = list(postings)
    ids = {term: n for n, term in enumerate(vocabulary)}
    codes = [_codes(postings[term]) for term in vocabulary]
    np.save(path / "postings.codes.npy", np.concatenate(codes) if codes else np.zeros(0, "u4"))
    np.save(path / "postings.counts.npy", np.array([len(c) for c in codes], dtype=np.int32))
    np.save(path / "doc_terms.npy", np.array([ids[t] for t in bm25["_doc_terms"]], dtype="i4"))
    for name in ("_doc_start", "_doc_count", "_lengths"):
        np.save(path / f"bm25.{name}.npy", bm25[name])
    blocks: Keys = index._top_keys._blocks
    np.save(path / "top_keys.npy", np.array([k for b in blocks for k in b], dtype=np.int64))
    rest = {k: v for k, v in vars(index).items() if k not in _TRANSIENT | _REBUILT}
    arrays = {"_postings", "_doc_terms", "_doc_start", "_doc_count", "_lengths"}
    small = {k: v for k, v in bm25.items() if k not in arrays}
    with (path / "rest.pickle").open("wb") as out:
        pickle.dump((rest, small, vocabulary, index._messages), out, pickle.HIGHEST_PROTOCOL)


def _codes(postings: int | bytes | array[int]) -> np.ndarray[Any, np.dtype[np.uint32]]:
    if isinstance(postings, int):  # a lone posting: the slot (tf 1) or -code
        return np.array([postings << 8 | 1 if postings >= 0 else -postings], dtype=np.uint32)
    return np.frombuffer(postings, dtype=np.uint32)


def _postings(codes: np.ndarray[Any, np.dtype[np.uint32]]) -> int | bytes | array[int]:
    if len(codes) == 1:
        code = int(codes[0])
        return code >> 8 if code & 0xFF == 1 else -code
    return codes.tobytes() if len(codes) <= 64 else array("I", codes.tobytes())


def load_index(path: Path) -> ChannelIndex:
    """A ChannelIndex holding what :func:`save_index` wrote, rebuilt without tokenising."""
    with (path / "rest.pickle").open("rb") as source:
        rest, small, vocabulary, stored = pickle.load(source)
    index = ChannelIndex(rest["channel"])
    vars(index).update(rest)
    rows, threads = Rows.__new__(Rows), Threads.__new__(Threads)
    for prefix, columns in (("rows", rows), ("threads", threads)):
        for file in path.glob(f"{prefix}.*.npy"):
            setattr(columns, file.name.split(".")[1], np.load(file))
    index.rows, index.threads = rows, threads
    bm25 = vars(index.bm25)
    bm25.update(small)
    for name in ("_doc_start", "_doc_count", "_lengths"):
        bm25[name] = np.load(path / f"bm25.{name}.npy")
    codes, counts = np.load(path / "postings.codes.npy"), np.load(path / "postings.counts.npy")
    ends = np.cumsum(counts)
    starts = ends - counts
    bm25["_postings"] = {
        term: _postings(codes[s:e])
        for term, s, e in zip(vocabulary, starts.tolist(), ends.tolist(), strict=True)
    }
    bm25["_doc_terms"] = [vocabulary[n] for n in np.load(path / "doc_terms.npy").tolist()]
    index._messages = stored
    live = np.flatnonzero(rows.live[:-1])
    index._slot_of = dict(zip(rows.key[live].tolist(), live.tolist(), strict=True))
    top = KeyBlocks()
    keys = np.load(path / "top_keys.npy").tolist()
    blocks = [keys[at : at + 512] for at in range(0, len(keys), 512)]
    top._blocks, top._firsts, top._count = blocks, [b[0] for b in blocks], len(keys)
    index._top_keys = top
    free = set(rest["_free_tids"])
    index._tid_of = {key: tid for tid, key in enumerate(rest["_thread_keys"]) if tid not in free}
    return index


def tops_of(index: ChannelIndex, intents: list[str], names: Names) -> tuple[Keys, list[float]]:
    """Each intent's top 10 keys in the whole-channel ranking, and the seconds each took."""
    tops: Keys = []
    took: list[float] = []
    with index.lock:
        for intent in intents:
            started = time.perf_counter()
            found = search(
                index, intent=intent, authors=(), since=None, names=names, now=None,
                limit=TOP, per_thread=PER_THREAD,
            )  # fmt: skip
            took.append(time.perf_counter() - started)
            tops.append([ts_key(hit.message.ts) for hit in found.hits])
    return tops, took


def measure_persisted(
    index: ChannelIndex, root: Path, way: Way, intents: list[str], names: Names
) -> tuple[Keys, ChannelIndex]:
    """Save, load, check the loaded index answers as the built one; (its tops, the loaded)."""
    saved = root / "index"
    started = time.perf_counter()
    save_index(index, saved)
    way.notes["save"] = time.perf_counter() - started
    way.bytes = dir_bytes(saved)
    gc.collect()
    started = time.perf_counter()
    loaded = load_index(saved)
    tops_of(loaded, intents[:1], names)
    way.reopen = time.perf_counter() - started
    tops, took = tops_of(loaded, intents, names)
    way.search, way.recall, way.notes["load"] = percentiles(took), 1.0, load()
    return tops, loaded


def delete_persisted(index: ChannelIndex, root: Path, way: Way, planted: str) -> None:
    """No in-place deletion: the message leaves the index, which is written anew."""
    saved = root / "index"
    way.held["before"] = holding(saved)
    started = time.perf_counter()
    with index.lock:
        index.remove(planted)
    save_index(index, root / "index.new")
    shutil.rmtree(saved)
    (root / "index.new").rename(saved)
    way.delete = time.perf_counter() - started
    way.held["after the deletion"] = holding(saved)
    way.notes["delete load"] = load()


def main(argv: Sequence[str] = ()) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench index_choice")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    size = args.messages
    names = Names(users=Corpus(seed=11).users, channels={CHANNEL: "engineering"})
    intents = Corpus(seed=11).intents(args.queries)
    asks = [[k.word for k in keywords(intent)] for intent in intents]
    fts5, tanti, persisted = Way(), Way(), Way()
    root = Path(tempfile.mkdtemp(prefix="chanctx-index-choice-", dir="/tmp"))
    data, tantivy_dir = root / "store", root / "tantivy"
    data.mkdir(), tantivy_dir.mkdir()
    try:
        fts5.build, planted = fill_store(data, size)
        fts5.bytes, fts5.notes["build load"] = dir_bytes(data), load()
        with closing(sqlite3.connect(f"file:{data / 'channels.sqlite3'}?mode=ro", uri=True)) as db:
            found = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'ix!_%' ESCAPE '!'")
            fts5.notes["index bytes"] = int(found.fetchone()[0] or 0)  # the FTS5 shards alone
        tanti.build, tanti.notes["build load"] = build_tantivy(tantivy_dir, size, names), load()
        tanti.bytes = dir_bytes(tantivy_dir)
        tanti.notes["index bytes"] = tanti.bytes - sum(
            p.stat().st_size for p in tantivy_dir.glob("*.store")
        )  # without the stored text and author
        index, read, indexed = build_from_store(data, names)
        persisted.build, persisted.notes["build load"] = read + indexed, load()
        persisted.notes["read"], persisted.notes["index"] = read, indexed
        print(f"in-memory index from the store: read {read:.1f} s, index {indexed:.1f} s")
        tops, _ = tops_of(index, intents, names)
        loaded_tops, loaded = measure_persisted(index, root, persisted, intents, names)
        persisted.notes["same"] = sum(a == b for a, b in zip(tops, loaded_tops, strict=True))
        del index
        gc.collect()
        with ExitStack() as opened:
            measure(fts5, lambda: fts5_asker(data, opened), asks, tops)
        measure(tanti, lambda: tantivy_asker(tantivy_dir), asks, tops)
        tanti.notes["segments"] = tantivy.Index.open(str(tantivy_dir)).searcher().num_segments
        print(f"FTS5: {fts5}\ntantivy: {tanti}\npersisted: {persisted}", flush=True)
        delete_fts5(data, fts5, planted)
        delete_tantivy(tantivy_dir, tanti, planted)
        delete_persisted(loaded, root, persisted, planted)
        print(f"deletions: {fts5.held} {tanti.held} {persisted.held}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    body = report(args, fts5, tanti, persisted)
    print(body)
    if not args.no_write:
        write_section("Index choice", body)


def report(args: argparse.Namespace, fts5: Way, tanti: Way, persisted: Way) -> str:
    size, queries, ways = args.messages, args.queries, (fts5, tanti, persisted)

    def row(label: str, value: Callable[[Way], float], shown: str, base: bool = True) -> str:
        cells = [shown.format(value(w)) for w in ways]
        if base and value(fts5):  # the ratio against FTS5 beside the others
            cells[1:] = [
                f"{c} ({value(w) / value(fts5):.2f}x)"
                for c, w in zip(cells[1:], ways[1:], strict=True)
            ]
        return f"| {label} | " + " | ".join(cells) + " |"

    def gone(way: Way) -> str:
        return "; ".join(
            f"{step}: {f'in {held}' if held else 'gone'}" for step, held in way.held.items()
        )

    p, t, f = persisted.notes, tanti.notes, fts5.notes
    return f"""
`python -m bench index_choice --messages {size} --queries {queries}`: one channel of {size:,}
messages (`bench.store`'s synthetic chat, one with a planted word), {queries} intents, the three
indexes on the same messages in one run; ratios against FTS5. Search: the best {CANDIDATES}
candidates for the intent's keywords (FTS5: the store's `search_candidates`; tantivy: BM25 over
text and author, `en_stem`, the keywords as phrases joined by OR, the keys from a fast field);
for the persisted index, the whole ranking itself (`search`, top {TOP}, {PER_THREAD} a thread),
whose top {TOP} the recall row asks the candidates for.

| | SQLite FTS5 (the store) | tantivy | in-memory index persisted |
|---|---:|---:|---:|
{row("search p50 (ms)", lambda w: w.search[0], "{:.2f}")}
{row("search p95 (ms)", lambda w: w.search[1], "{:.2f}")}
{row(f"recall of the ranking's top {TOP}", lambda w: w.recall, "{:.3f}", base=False)}
{row("bytes on disk per message", lambda w: w.bytes / size, "{:,.0f} B")}
{row("fill / index / read + index from the store (s)", lambda w: w.build, "{:.3g}")}
{row("the same in messages/s", lambda w: size / w.build, "{:,.0f}", base=False)}
{row("restart to the first search answered (s)", lambda w: w.reopen, "{:.3g}")}
{row("one deletion (s)", lambda w: w.delete, "{:.3g}")}
| the deleted message's word in the files | {" | ".join(map(gone, ways))} |

Load (1-minute average) at the builds: FTS5 {f["build load"]}, tantivy {t["build load"]},
persisted {p["build load"]}; at the searches: {f["load"]}, {t["load"]}, {p["load"]}; at the
deletions: {f["delete load"]}, {t["delete load"]}, {p["delete load"]}. The page cache is warm
for every restart (the same process wrote the files). The bytes hold the text in every column:
the store's record, tantivy's stored fields, the persisted index's messages; the index alone
is {f["index bytes"] / size:,.0f} B a message in FTS5 (its shards) and
{t["index bytes"] / size:,.0f} B in tantivy (all but its `.store` files).

* The persisted index: built from the store in {p["read"]:.1f} s of reads and {p["index"]:.1f} s
  of indexing (as `bot/core/store_index.py` builds it), saved in {p["save"]:.1f} s, loaded with
  its first search in {persisted.reopen:.2f} s ({persisted.build / persisted.reopen:.0f}x faster
  than the build); loaded, it gave the built index's top {TOP} for {p["same"]} of {queries}
  intents. Its format (numpy columns, postings flattened into numpy, a pickle of the messages
  and the rest) is this bench's only: no in-place deletion (a deletion compacts the postings
  and rewrites every file), no checksum, no recovery after a torn write.
* tantivy (tantivy-py {version("tantivy")}): one indexing thread, a {WRITER_HEAP // 2**20} MB
  writer heap, a commit per 10,000 messages, the merges waited for ({t["segments"]} segments).
  The deletion (delete-by-term on the ts key, a commit) leaves the word in the term dictionary
  (`doc_freq` {t["doc_freq after"]}, {t["hits after"]} hits): tantivy-py has no call that
  merges a chosen segment and the merge policy leaves a large segment with one deletion as it
  is, so the bytes leave only when it is rewritten (with this API: the index rebuilt). It holds one channel (a
  workspace needs a channel term in every query) and is a second store to keep in step.
* SQLite FTS5: the store's own delete path (`write([MessageDeleted])`): the tombstone, the
  merge of the shard that held the message and the log's checkpoint, in one call.
"""


if __name__ == "__main__":
    main(sys.argv[1:])
