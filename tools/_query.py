"""The context query (seed 001) over one channel: blocks ranked for a query, sized to a budget.

A block is a ``message`` (a top-level message with no replies) or a ``thread`` (its root and
replies, in order); a search hit on a reply brings its whole thread. Relevance is the search
score over the best one (0-1]. Packing is seed 001's optimizer (``context.budget.optimize``):
pinned first, then relevance; the first block that does not fit is cut at a sentence boundary,
and nothing after it is taken. ``total_tokens`` is what ``rendered`` costs, format included.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from chanctx.context import Message, Names, TokenCounter, iso_from_ts
from chanctx.context._render import author_of, text_of
from chanctx.context.budget import Chunk, optimize
from chanctx.tools._context_tool import PER_THREAD
from chanctx.tools._indexed import SearchScope
from chanctx.tools._search import search

__all__ = ["BLOCK_TYPES", "FORMATS", "QueryChunk", "QueryResult", "query_channel", "render"]

Format = Literal["json", "markdown", "text"]
FORMATS: Final = ("json", "markdown", "text")
BLOCK_TYPES: Final = ("message", "thread")
_CANDIDATES: Final = 50
_TEXT_SEPARATOR: Final = "\n\n---\n\n"


@dataclass(frozen=True)
class QueryChunk:
    block_id: str
    block_type: str
    source: str
    text: str
    tokens: int
    relevance: float
    pinned: bool
    truncated: bool
    original_tokens: int


@dataclass(frozen=True)
class QueryResult:
    chunks: list[QueryChunk]
    rendered: str
    total_tokens: int
    truncated_count: int
    timed_out: bool


@dataclass(frozen=True)
class _Block:
    block_id: str
    block_type: str
    source: str
    text: str


def _line(message: Message, names: Names) -> str:
    return f"[{iso_from_ts(message.ts)}] {author_of(message, names).display_name}: " + " ".join(
        text_of(message, names).split()
    )


def _fragment(chunk: QueryChunk | _Block, text: str, fmt: Format) -> str:
    """One block as ``rendered`` shows it, separator included."""
    if fmt == "markdown":
        return f"## {chunk.block_type}: {chunk.source}\n\n{text}\n\n"
    if fmt == "text":
        return text + _TEXT_SEPARATOR
    return json.dumps(
        {"block_id": chunk.block_id, "block_type": chunk.block_type, "source": chunk.source,
         "text": text}, ensure_ascii=False,
    ) + ","  # fmt: skip


def render(chunks: Sequence[QueryChunk], fmt: Format) -> str:
    """The chunks as the reader receives them: a JSON array, markdown with a header per
    block, or plain text with separators."""
    if fmt == "json":
        return json.dumps(
            [
                {"block_id": c.block_id, "block_type": c.block_type, "source": c.source,
                 "text": c.text}
                for c in chunks
            ],
            ensure_ascii=False,
        )  # fmt: skip
    if fmt == "markdown":
        return "".join(_fragment(c, c.text, fmt) for c in chunks).rstrip("\n")
    return _TEXT_SEPARATOR.join(c.text for c in chunks)


def _blocks(
    scope: SearchScope,
    channel_label: str,
    query: str,
    names: Names,
    get_thread: Callable[[str], list[Message]],
) -> list[tuple[_Block, float]]:
    index = scope.index
    with index.lock:
        if scope.messages is not None:
            index.sync(scope.messages(), names)
        index.refresh(names)
        found = search(
            index, intent=query, authors=(), since=None, names=names, now=None,
            limit=_CANDIDATES, per_thread=PER_THREAD, hidden=scope.hidden,
        )  # fmt: skip
    best = max((hit.score for hit in found.hits), default=0.0)
    blocks: dict[str, tuple[_Block, float]] = {}
    for hit in found.hits:
        message = hit.message
        relevance = round(hit.score / best, 4) if best > 0 else 0.0
        thread = get_thread(message.root_ts) if (message.is_reply or message.reply_count) else []
        if thread:
            block = _Block(
                f"thread:{message.channel}:{message.root_ts}", "thread",
                f"{channel_label} thread {iso_from_ts(message.root_ts)}",
                "\n".join(_line(m, names) for m in thread),
            )  # fmt: skip
        else:
            block = _Block(
                f"message:{message.channel}:{message.ts}", "message",
                f"{channel_label} {iso_from_ts(message.ts)}", _line(message, names),
            )  # fmt: skip
        if block.block_id not in blocks:  # the thread's best hit decides its relevance
            blocks[block.block_id] = (block, relevance)
    return list(blocks.values())


def query_channel(
    scope: SearchScope,
    query: str,
    *,
    channel_label: str,
    names: Names,
    counter: TokenCounter,
    token_budget: int,
    fmt: Format,
    type_filters: Sequence[str] = (),
    thread_of: Callable[[str], list[Message]],
    timeout_ms: int | None = None,
    pinned: Sequence[Message] = (),
) -> QueryResult:
    """The channel's best blocks for ``query`` within ``token_budget`` tokens of ``rendered``.

    ``thread_of``: a thread's messages (root first) from what is cached: no Slack call here.
    ``pinned``: the channel's pinned messages: message blocks that come first, whatever the
    query (their relevance is still the search's, 0 when it did not find them).
    """
    started = time.monotonic()
    found = [
        (b, r, False)
        for b, r in _blocks(scope, channel_label, query, names, thread_of)
        if not type_filters or b.block_type in type_filters
    ]
    if pinned and (not type_filters or "message" in type_filters):
        scored = {b.block_id: r for b, r, _ in found}
        pins = [
            _Block(f"message:{m.channel}:{m.ts}", "message",
                   f"{channel_label} {iso_from_ts(m.ts)} (pinned)", _line(m, names))
            for m in pinned if not m.deleted
        ]  # fmt: skip
        ids = {b.block_id for b in pins}
        found = [(b, scored.get(b.block_id, 0.0), True) for b in pins] + [
            item for item in found if item[0].block_id not in ids
        ]
    frame = 2 if fmt == "json" else 0  # "[" and "]"

    def cost(chunk: Chunk[_Block], text: str) -> int:
        return counter.count(_fragment(chunk.item, text, fmt))

    packing = optimize(
        [Chunk(key=b.block_id, text=b.text, item=b, relevance=r, pinned=p) for b, r, p in found],
        budget=max(token_budget - frame, 0),
        cost=cost,
    )
    chunks = [
        QueryChunk(
            block_id=p.chunk.item.block_id,
            block_type=p.chunk.item.block_type,
            source=p.chunk.item.source,
            text=p.text,
            tokens=counter.count(p.text),
            relevance=p.chunk.relevance,
            pinned=p.chunk.pinned,
            truncated=p.truncated,
            original_tokens=counter.count(p.chunk.text),
        )
        for p in packing.included
    ]
    rendered = render(chunks, fmt)
    # Summed fragments estimate the whole; the whole decides (drop the last block until it fits).
    while chunks and counter.count(rendered) > token_budget:
        chunks = chunks[:-1]
        rendered = render(chunks, fmt)
    elapsed_ms = (time.monotonic() - started) * 1000
    return QueryResult(
        chunks=chunks,
        rendered=rendered,
        total_tokens=counter.count(rendered),
        truncated_count=sum(1 for c in chunks if c.truncated),
        timed_out=timeout_ms is not None and elapsed_ms > timeout_ms,
    )
