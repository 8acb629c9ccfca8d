"""Context query speed at 100,000 messages in one channel (seed 001's service).

``python -m bench.query_speed [SIZE]`` (about three minutes). The synthetic engineering channel
of ``bench.search_speed`` is loaded into the engine's history (its search index kept current on
every write, as in the running bot). Measured, over 200 realistic queries:

* ``POST /api/context/query``'s work (``run_query``: search, blocks, packing into a 4,000-token
  markdown answer, rendering and counting) p50/p95;
* the same answer built the baseline way: a rank-bm25 ``BM25Okapi.get_scores`` full scan of
  the channel (its one-off build not counted), the top 50, and the same packing;
* the Server-Sent Events time to the first ``chunk`` event over real HTTP (uvicorn, loopback).
"""

from __future__ import annotations

import http.client
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.server import BackgroundServer
from chanctx.bot.server.queries import QueryBody, run_query
from chanctx.bot.server.query_api import query_routes
from chanctx.bot.slack.intake import SelfIdentity
from chanctx.context import default_counter
from chanctx.context.budget import Chunk, optimize
from chanctx.context.render import text_of
from chanctx.tools._index import document_terms
from chanctx.tools._indexed import IndexedHistory
from chanctx.tools._keywords import keywords
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]
from starlette.applications import Starlette

from bench._results import write_section
from bench.search_speed import CHANNEL, _percentiles, generated

SIZE = 100_000
QUERIES = 200
BUDGET = 4_000


def _baseline(bm25: BM25Okapi, texts: list[str], intent: str) -> int:
    """rank-bm25's full scan, the top 50, packed like the service packs (message blocks)."""
    count = default_counter().count
    scores = bm25.get_scores([k.term for k in keywords(intent, "porter")])
    top = np.argsort(scores)[::-1][:50]
    best = float(scores[top[0]]) if len(top) and scores[top[0]] > 0 else 1.0
    chunks = [
        Chunk(key=str(i), text=texts[i], item=i, relevance=float(scores[i]) / best) for i in top
    ]
    packing = optimize(
        chunks, budget=BUDGET, cost=lambda chunk, text: count(f"## message\n\n{text}\n\n")
    )
    return len(packing.included)


def _first_chunk_ms(port: int, intent: str) -> float:
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    query = f"query={intent.replace(' ', '+').replace('#', '%23').replace('?', '')}"
    connection.request(
        "GET", f"/api/context/stream?{query}&channel={CHANNEL}&token_budget={BUDGET}"
    )
    response = connection.getresponse()
    while True:
        line = response.readline()
        if not line or line.startswith(b"event: chunk") or line.startswith(b"event: complete"):
            break
    elapsed = (time.perf_counter() - started) * 1000
    connection.close()
    return elapsed


def main(argv: Sequence[str] = ()) -> None:
    size = int(argv[0]) if argv else SIZE
    _, messages, names, intents = generated(size, QUERIES)
    engine = ContextEngine(
        me=SelfIdentity(user_id="U0BOT", bot_id="B0BOT"),
        names=names,
        history=IndexedHistory(max_messages_per_channel=size),
        counter=default_counter(),
    )
    for message in messages:
        engine.history.record(message)
    run_query(engine, QueryBody(query="warm up", channel=CHANNEL))  # the index catches up once
    print(f"{size:,} messages loaded", flush=True)

    service = []
    sizes = []
    for intent in intents:
        started = time.perf_counter()
        answer = run_query(engine, QueryBody(query=intent, channel=CHANNEL, token_budget=BUDGET))
        service.append((time.perf_counter() - started) * 1000)
        sizes.append(len(answer["chunks"]))

    texts = [text_of(m, names) for m in messages]
    bm25 = BM25Okapi(
        [document_terms(m, t, names, "porter") for m, t in zip(messages, texts, strict=True)]
    )
    baseline = []
    for intent in intents:
        started = time.perf_counter()
        _baseline(bm25, texts, intent)
        baseline.append((time.perf_counter() - started) * 1000)

    app = Starlette(routes=query_routes(engine, None))
    with BackgroundServer(app) as server:
        first = [_first_chunk_ms(server.port, intent) for intent in intents[:50]]

    s50, s95 = _percentiles(service)
    b50, b95 = _percentiles(baseline)
    f50, f95 = _percentiles(first)
    verdict = (
        "The service's index follows only the messages that match, where the baseline scores "
        "every message of the channel for every query."
        if b50 > s50
        else "At this size the baseline's scan is cheap and the service's extra work (thread "
        "blocks, rendering and counting the answer it sends) costs more."
    )
    body = f"""
`python -m bench.query_speed`: {size:,} messages in one channel (the synthetic engineering
channel of `bench.search_speed`), {QUERIES} realistic queries, each answered in up to
{BUDGET:,} tokens of markdown (median {statistics.median(sizes):.0f} blocks per answer).

| | p50 (ms) | p95 (ms) |
|---|---:|---:|
| `/api/context/query`'s work (search, blocks, packing, rendering, counting) | {s50:.1f} | {s95:.1f} |
| baseline: rank-bm25 full scan, top 50, same packing | {b50:.1f} | {b95:.1f} |
| SSE time to the first `chunk` event, over HTTP (50 queries) | {f50:.1f} | {f95:.1f} |

Baseline time / service time: **{b50 / s50:.1f}x** at the median, {b95 / s95:.1f}x at p95
(above 1: the service is faster). {verdict}
"""
    print(body)
    if "--no-write" not in argv:
        write_section("Context query speed", body)


if __name__ == "__main__":
    main([a for a in sys.argv[1:]])
