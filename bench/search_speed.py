"""Search speed at 100,000 messages in one channel: the incremental index against rank-bm25.

``python -m bench.search_speed`` (about two minutes). A synthetic but realistic engineering
channel (services, versions, ticket ids, status codes, people, a Zipf-distributed chat
vocabulary, one message in four a thread reply, some file uploads) is fed message by message
into an :class:`tools._indexed.IndexedHistory`, the history the bot runs on, bounded at 100,000
messages per channel. Measured:

* insert cost per message: ``record`` (what the event handler pays: the write plus queueing)
  and the indexing the next search does (tokenising, postings, columns), each per message;
  edit and delete the same way;
* memory of the index per 100,000 messages (tracemalloc, numpy included), beside the memory of
  the history's messages themselves;
* search latency p50/p95 over realistic intents, every ranking signal on: the full
  ``channel_context`` tool call (JSON answer fitted to the 4,000-token budget included) and the
  ranking alone; against the baseline, a rank-bm25 ``BM25Okapi.get_scores`` full scan over the
  same documents (its one-off build not counted).

Plus a check, on this corpus, that the index's plain BM25 scores equal BM25Okapi's.
"""

from __future__ import annotations

import gc
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from chanctx.cache import ts_key
from chanctx.context import FileRef, Message, Names
from chanctx.context.render import text_of
from chanctx.tools import ChannelTools, HistoryView
from chanctx.tools._index import ChannelIndex, document_terms
from chanctx.tools._indexed import IndexedHistory
from chanctx.tools._keywords import keywords
from chanctx.tools._ranking import Ranking
from chanctx.tools._search import search
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from bench._results import write_section

CHANNEL = "C0ENGINEERING"
T0 = 1_700_000_000
SIZE = 100_000
QUERIES = 300

PEOPLE = ["Priya", "Dev", "Sam", "Lee", "Ana", "Tomas", "Mei", "Oluwaseun", "Jakub", "Ines"]
SERVICES = [
    "checkout-api", "payments", "auth", "search", "gateway", "billing", "inventory", "ledger",
    "notifications", "orders", "catalog", "kafka", "postgres", "redis", "grafana", "k8s",
]  # fmt: skip
VERBS = [
    "deploy", "rollback", "fail", "timeout", "retry", "merge", "review", "release", "migrate",
    "restart", "scale", "page", "alert", "fix", "revert", "ship", "test", "upgrade", "patch",
]  # fmt: skip
_COMMON = """the a to is it in for on this that we i of and be with was are can not have just
    now so but if do at it's from up there ok what or an by will about get they out all like
    my one yes no think looks good thanks sure maybe also still again today tomorrow week
    soon please check see know need want going works working done thing issue error errors
    problem change changes config flag staging prod metrics dashboard logs latency p99 cpu
    memory disk queue pool connection connections request requests users traffic spike"""
COMMON = _COMMON.split()


def _vocabulary(rng: random.Random) -> list[str]:
    # A long tail of rarer chat words (made up but word-like), Zipf-weighted below.
    onsets = ["k", "l", "m", "r", "t", "s", "n", "v", "p", "d", "g", "b", "z", "sh", "tr", "pl"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    rare: set[str] = set()
    while len(rare) < 40_000:
        length = rng.randint(2, 4)
        rare.add("".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(length)))
    return COMMON + VERBS + SERVICES + sorted(rare)


class Corpus:
    """A deterministic generator of chat messages and realistic search intents."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = _vocabulary(self.rng)
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = 1.0 / ranks**1.05
        self.cumulative = np.cumsum(weights / weights.sum())
        self.users = {f"U{index:04d}{name.upper()}": name for index, name in enumerate(PEOPLE)}

    def _word(self) -> str:
        return self.words[int(np.searchsorted(self.cumulative, self.rng.random()))]

    def _text(self) -> str:
        rng = self.rng
        parts = [self._word() for _ in range(rng.randint(3, 22))]
        if rng.random() < 0.5:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice(SERVICES))
        if rng.random() < 0.35:
            parts.insert(
                rng.randrange(len(parts) + 1),
                rng.choice(VERBS) + rng.choice(["", "ed", "ing", "s"]),
            )
        if rng.random() < 0.1:
            parts.append(f"v2.{rng.randint(0, 40)}.{rng.randint(0, 9)}")
        if rng.random() < 0.08:
            parts.append(f"#{rng.randint(1000, 9999)}")
        if rng.random() < 0.06:
            parts.append(rng.choice(["502", "503", "500", "429", "404"]))
        if rng.random() < 0.05:
            parts.append(f"<@{rng.choice(list(self.users))}>")
        return " ".join(parts)

    def messages(self, count: int) -> list[Message]:
        rng = self.rng
        out: list[Message] = []
        roots: list[str] = []
        seconds = T0
        for index in range(count):
            seconds += rng.randint(5, 240)
            ts = f"{seconds}.{index % 1_000_000:06d}"
            user = rng.choice(list(self.users))
            files: tuple[FileRef, ...] = ()
            if rng.random() < 0.03:
                service = rng.choice(SERVICES)
                files = (
                    FileRef(
                        artifact_id=f"F{index:08d}",
                        media_type="image/png",
                        filename=f"{service}-latency.png",
                        title=f"{service} latency",
                    ),
                )
            thread_ts = None
            if roots and rng.random() < 0.25:
                thread_ts = rng.choice(roots[-50:])
            message = Message(
                channel=CHANNEL,
                ts=ts,
                thread_ts=thread_ts,
                user_id=user,
                text=self._text(),
                files=files,
            )
            if thread_ts is None:
                roots.append(ts)
            out.append(message)
        return out

    def intents(self, count: int) -> list[str]:
        rng = self.rng
        templates = [
            "why did {s} {v}?",
            "{s} {v} {w}",
            "what did {p} say about {s} {w}",
            "{s} {c} after v2.{n}.{m}",
            "{w} {w} {s}",
            "is {s} still {v}ing",
            "{c} from {s} #{t}",
            "{w} {w} {w}",
        ]
        out = []
        for _ in range(count):
            out.append(
                rng.choice(templates).format(
                    s=rng.choice(SERVICES),
                    v=rng.choice(VERBS),
                    w=self._word(),
                    p=rng.choice(PEOPLE),
                    c=rng.choice(["502s", "timeouts", "errors", "latency"]),
                    n=rng.randint(0, 40),
                    m=rng.randint(0, 9),
                    t=rng.randint(1000, 9999),
                )
            )
        return out


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def _timed(function: Callable[..., object], *args: Any) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


def generated(size: int, queries: int) -> tuple[Corpus, list[Message], Names, list[str]]:
    """The corpus, the channel's messages, its names and the search intents (deterministic)."""
    corpus = Corpus()
    messages = corpus.messages(size)
    names = Names(users=corpus.users, channels={CHANNEL: "engineering"})
    return corpus, messages, names, corpus.intents(queries)


LARGE = 500_000


def large(size: int = LARGE) -> dict[str, tuple[float, float]]:
    """p50/p95 (ms) at ``size`` messages in one channel: the tool call, the ranking alone and
    rank-bm25's full scan (50 queries), as in the main table."""
    _, messages, names, intents = generated(size, QUERIES)
    history = IndexedHistory(max_messages_per_channel=size)
    for message in messages:
        history.record(message)
    index = history.search_index(CHANNEL)
    with index.lock:
        index.refresh(names)
    tools = ChannelTools(HistoryView(history, CHANNEL), names=names)
    for intent in intents[:20]:
        tools.call("channel_context", {"intent": intent})
    tool = [_timed(tools.call, "channel_context", {"intent": intent}) for intent in intents]

    def rank_only(intent: str) -> None:
        with index.lock:
            search(index, intent=intent, authors=(), since=None, names=names, now=None,
                   limit=8, per_thread=3)  # fmt: skip

    ranking = [_timed(rank_only, intent) for intent in intents]
    live = history.messages(CHANNEL)
    del messages, history
    okapi = BM25Okapi([document_terms(m, text_of(m, names), names, "porter") for m in live])
    del live
    scans = [_timed(okapi.get_scores, [k.term for k in keywords(i)]) for i in intents[:50]]
    return {
        "tool": _percentiles(tool),
        "ranking": _percentiles(ranking),
        "baseline": _percentiles(scans),
    }


def main(argv: Sequence[str] = ()) -> None:
    size = int(argv[0]) if argv else SIZE
    corpus, messages, names, intents = generated(size, QUERIES)
    print(f"{size:,} messages generated", flush=True)

    # -- insert cost ------------------------------------------------------------------------
    history = IndexedHistory(max_messages_per_channel=size)
    gc.collect()
    started = time.perf_counter()
    for message in messages:
        history.record(message)
    record_cost = (time.perf_counter() - started) / size
    index = history.search_index(CHANNEL)
    started = time.perf_counter()
    with index.lock:
        index.refresh(names)
    index_cost = (time.perf_counter() - started) / size
    print(f"record {record_cost * 1e6:.1f} us/msg, indexing {index_cost * 1e6:.1f} us/msg")

    # -- memory -----------------------------------------------------------------------------
    gc.collect()
    tracemalloc.start()
    baseline_memory = tracemalloc.get_traced_memory()[0]
    copies = [m.model_copy() for m in messages]
    messages_memory = tracemalloc.get_traced_memory()[0] - baseline_memory
    before = tracemalloc.get_traced_memory()[0]
    measured = ChannelIndex(CHANNEL)  # fed as IndexedHistory feeds it: queue, then refresh
    with measured.lock:
        for message in copies:
            measured.queue(ts_key(message.ts), message)
        measured.refresh(names)
    index_memory = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del measured, copies
    gc.collect()

    # -- latency ----------------------------------------------------------------------------
    view = HistoryView(history, CHANNEL)
    tools = ChannelTools(view, names=names)
    ranking = Ranking()
    for intent in intents[:20]:  # warm up
        tools.call("channel_context", {"intent": intent})
    tool_times = [_timed(tools.call, "channel_context", {"intent": intent}) for intent in intents]

    def rank_only(intent: str) -> None:
        with index.lock:
            index.refresh(names)
            search(
                index,
                intent=intent,
                authors=(),
                since=None,
                names=names,
                now=None,
                limit=8,
                per_thread=3,
                ranking=ranking,
            )

    search_times = [_timed(rank_only, intent) for intent in intents]

    live = history.messages(CHANNEL)
    documents = [document_terms(m, text_of(m, names), names, "porter") for m in live]
    okapi = BM25Okapi(documents, k1=ranking.k1, b=ranking.b, epsilon=ranking.epsilon)
    queries = [[k.term for k in keywords(intent)] for intent in intents]
    baseline_times = [_timed(okapi.get_scores, query) for query in queries[:100]]

    # Plain BM25 equality on this corpus: the index's scores against BM25Okapi's.
    slot_of = {m.ts: index.slot(m.ts) for m in live}
    worst = 0.0
    for query in queries[:50]:
        expected = okapi.get_scores(query)
        slots, scores = index.bm25.scores(
            query, k1=ranking.k1, b=ranking.b, epsilon=ranking.epsilon
        )
        got = dict(zip(slots.tolist(), scores.tolist(), strict=True))
        for position, message in enumerate(live):
            worst = max(worst, abs(got.get(slot_of[message.ts], 0.0) - float(expected[position])))

    # -- live writes: the channel is full, so each new message evicts the oldest ----------
    extra = Corpus(seed=8).messages(200)
    live_costs = []
    for position, message in enumerate(extra):
        message = message.model_copy(
            update={"ts": f"{T0 + 10**8 + position}.000000", "thread_ts": None}
        )
        live_costs.append(_timed(history.record, message))
        live_costs.append(_timed(index.refresh, names))

    def edit(message: Message) -> None:
        history.apply_edit(CHANNEL, message.ts, text=message.text + " edited fix")
        index.refresh(names)

    def delete(message: Message) -> None:
        history.delete(CHANNEL, message.ts)
        index.refresh(names)

    sample = random.Random(3).sample(history.messages(CHANNEL), 400)
    edit_costs = [_timed(edit, message) for message in sample[:200]]
    delete_costs = [_timed(delete, message) for message in sample[200:]]

    tool_p50, tool_p95 = _percentiles(tool_times)
    search_p50, search_p95 = _percentiles(search_times)
    base_p50, base_p95 = _percentiles(baseline_times)
    live_p50 = statistics.median(live_costs[1::2]) + statistics.median(live_costs[0::2])
    edit_p50, delete_p50 = statistics.median(edit_costs), statistics.median(delete_costs)
    mib = 1024 * 1024
    print(f"tool p50 {tool_p50 * 1e3:.2f} ms, p95 {tool_p95 * 1e3:.2f} ms")
    print(f"ranking p50 {search_p50 * 1e3:.2f} ms, p95 {search_p95 * 1e3:.2f} ms")
    print(f"rank-bm25 p50 {base_p50 * 1e3:.1f} ms, p95 {base_p95 * 1e3:.1f} ms")
    print(f"index memory {index_memory / mib:.1f} MiB, messages {messages_memory / mib:.1f} MiB")
    print(f"max |index - BM25Okapi| = {worst:.2e}")
    count = len(live)
    body = f"""
`python -m bench.search_speed`: one synthetic engineering channel of {count:,} messages
(services, versions, tickets, status codes, 10 people, a Zipf-distributed vocabulary of
{len(corpus.words):,} words, a quarter of the messages thread replies, 3% with a file), fed one
message at a time into `tools._indexed.IndexedHistory` (bounded at {size:,} per channel, the
history the bot runs on with `CHANCTX_HISTORY_PER_CHANNEL`). {QUERIES} realistic intents
("why did checkout-api fail?", "what did Dev say about redis ...", "502s from gateway #4821").
Every ranking signal on (BM25, keyword share, thread, conversational context and its candidates,
dates, named people, cause, recency, activity). Baseline, same run: rank-bm25 `BM25Okapi.get_scores` over the same
documents (a full scan; building it, {count:,} documents, not counted).

| search at {count:,} messages | p50 (ms) | p95 (ms) |
|---|---:|---:|
| `channel_context` tool call (index, ranking, JSON fitted to 4,000 tokens) | {tool_p50 * 1e3:.2f} | {tool_p95 * 1e3:.2f} |
| ranking alone (`tools._search.search` on the index) | {search_p50 * 1e3:.2f} | {search_p95 * 1e3:.2f} |
| baseline: rank-bm25 full scan (`get_scores`) | {base_p50 * 1e3:.1f} | {base_p95 * 1e3:.1f} |

The tool call is **{base_p50 / tool_p50:.0f}x** faster than the full scan at p50 (bar: p50 at
most 5 ms). The search touches only the messages holding an intent's terms (postings), then
computes every signal with numpy over those; nothing lists the channel's messages.

| cost | per message |
|---|---:|
| `record` into the history (the event handler's share: write + queue) | {record_cost * 1e6:.1f} us |
| indexing it (done by the next search: tokenise, postings, columns), bulk | {index_cost * 1e6:.1f} us |
| live, channel full: a new message evicts the oldest; record + refresh (median) | {live_p50 * 1e6:.1f} us |
| an edit: record + refresh (median) | {edit_p50 * 1e6:.1f} us |
| a deletion: record + refresh (median) | {delete_p50 * 1e6:.1f} us |

Removing a message from the index (eviction, edit, deletion) costs more than adding one: each
of its terms' postings is scanned (vectorised) to find it, so a message full of common words
costs most.

Memory of the index: **{index_memory / mib:.1f} MiB per {size:,} messages** (postings as int32
arrays, per-message numpy columns, term lists, thread and conversation links; tracemalloc),
beside {messages_memory / mib:.1f} MiB for the messages themselves, which the history holds
anyway. Plain BM25 check on this corpus: the largest difference between the index's scores and
`BM25Okapi.get_scores` over 50 queries x {count:,} documents is {worst:.1e}.
"""
    if size == SIZE:
        del history, index, okapi, live, documents, messages, tools, view
        gc.collect()
        big = large()
        tool_p50, tool_p95 = big["tool"]
        rank_p50, rank_p95 = big["ranking"]
        scan_p50, scan_p95 = big["baseline"]
        body += f"""
At {LARGE:,} messages in one channel (the same generator, bounded at {LARGE:,}):

| search at {LARGE:,} messages | p50 (ms) | p95 (ms) |
|---|---:|---:|
| `channel_context` tool call | {tool_p50 * 1e3:.2f} | {tool_p95 * 1e3:.2f} |
| ranking alone | {rank_p50 * 1e3:.2f} | {rank_p95 * 1e3:.2f} |
| baseline: rank-bm25 full scan (50 queries) | {scan_p50 * 1e3:.1f} | {scan_p95 * 1e3:.1f} |
"""
        print(body)
        write_section("Search speed", body)
    else:
        print(body)


if __name__ == "__main__":
    main(sys.argv[1:])
