"""The context query over one channel: blocks ranked for a query, sized to a budget.

A block is a ``message`` (a top-level message with no replies) or a ``thread`` (its root and
replies, in order); a search hit on a reply brings its whole thread. Relevance is the search
score over the best one (0-1]. The caller may add blocks that are not channel messages
(``ExtraBlock``: a shared file's text, a recipe source, a playbook); they are scored with
BM25 over the same candidate set, so a file that matches better than every message ranks first
and one that matches nothing is left out (unless pinned). Packing is the budget optimizer
(``context.budget``): pinned first, then relevance; the first block that does not fit is cut at
a sentence boundary, and nothing after it is taken. ``total_tokens`` is what ``rendered``
costs, format included. ``should_stop`` ends the packing early (a deadline passed, the caller
went away): what was packed so far is the answer, and ``timed_out`` says so.
"""

from __future__ import annotations

import heapq
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from chanctx.context import Message, Names, TokenCounter, iso_from_ts
from chanctx.context.budget import Chunk, pack
from chanctx.context.render import display_name_of, text_of
from chanctx.tools._context_tool import PER_THREAD
from chanctx.tools._indexed import SearchScope
from chanctx.tools._keywords import terms
from chanctx.tools._ranking import Hit
from chanctx.tools._search import search
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

__all__ = [
    "BLOCK_TYPES",
    "FORMATS",
    "ExtraBlock",
    "QueryChunk",
    "QueryResult",
    "query_channel",
    "render",
]

Format = Literal["json", "markdown", "text"]
FORMATS: Final = ("json", "markdown", "text")
BLOCK_TYPES: Final = ("message", "thread", "file", "recipe", "playbook")
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


class _Block:
    """A candidate block. A channel block's text (its messages, one line each) is rendered on
    first use: packing stops at the first block that does not fit, so most of the fifty
    candidates are never rendered (rendering was most of a served query's time)."""

    __slots__ = ("_messages", "_names", "_text", "block_id", "block_type", "source")

    def __init__(
        self,
        block_id: str,
        block_type: str,
        source: str,
        text: str | None = None,
        *,
        messages: Sequence[Message] = (),
        names: Names | None = None,
    ) -> None:
        self.block_id = block_id
        self.block_type = block_type
        self.source = source
        self._text = text
        self._messages = messages
        self._names = names

    @property
    def text(self) -> str:
        if self._text is None:
            names = self._names if self._names is not None else Names()
            self._text = "\n".join(_line(m, names) for m in self._messages)
            self._messages = ()
        return self._text


@dataclass(frozen=True)
class ExtraBlock:
    """A block that is not a channel message: ``file``, ``recipe`` or ``playbook``. A pinned
    one comes first whatever the query; an unpinned one only when the query matches it."""

    block_id: str
    block_type: str
    source: str
    text: str
    pinned: bool = False


def _line(message: Message, names: Names) -> str:
    return f"[{iso_from_ts(message.ts)}] {display_name_of(message, names)}: " + " ".join(
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


def _hits(scope: SearchScope, query: str, names: Names) -> tuple[list[Hit], list[float]]:
    """The search's best hits for ``query`` and each one's relevance (its score over the
    best one's)."""
    index = scope.index
    with index.lock:
        scope.prepare(query, names)
        found = search(
            index, intent=query, authors=(), since=None, names=names, now=None,
            limit=_CANDIDATES, per_thread=PER_THREAD, hidden=scope.hidden, explain=False,
        )  # fmt: skip
    best = max((hit.score for hit in found.hits), default=0.0)
    return found.hits, [round(hit.score / best, 4) if best > 0 else 0.0 for hit in found.hits]


def _threaded(message: Message) -> bool:
    return message.is_reply or message.reply_count > 0


def _message_block(message: Message, channel_label: str, names: Names) -> _Block:
    source = f"{channel_label} {iso_from_ts(message.ts)}"
    return _Block(
        f"message:{message.channel}:{message.ts}", "message", source, messages=(message,),
        names=names,
    )  # fmt: skip


def _thread_block(
    message: Message, thread: list[Message], channel_label: str, names: Names
) -> _Block:
    source = f"{channel_label} thread {iso_from_ts(message.root_ts)}"
    block_id = f"thread:{message.channel}:{message.root_ts}"
    return _Block(block_id, "thread", source, messages=thread, names=names)


def _blocks(
    hits: Sequence[Hit],
    relevance: Sequence[float],
    channel_label: str,
    names: Names,
    get_thread: Callable[[str], list[Message]],
) -> list[tuple[_Block, float]]:
    """Every hit's block, in hit order: a hit in a thread brings its thread (once: the
    thread's first hit decides its relevance), any other its own message."""
    blocks: dict[str, tuple[_Block, float]] = {}
    for hit, score in zip(hits, relevance, strict=True):
        message = hit.message
        thread = get_thread(message.root_ts) if _threaded(message) else []
        if thread:
            block = _thread_block(message, thread, channel_label, names)
        else:
            block = _message_block(message, channel_label, names)
        blocks.setdefault(block.block_id, (block, score))
    return list(blocks.values())


def _blocks_by_relevance(
    hits: Sequence[Hit],
    relevance: Sequence[float],
    channel_label: str,
    names: Names,
    get_thread: Callable[[str], list[Message]],
) -> Iterator[tuple[_Block, float]]:
    """:func:`_blocks` sorted by relevance (stable), each thread read only when its block
    is reached: packing stops at the first block that does not fit, so most threads of the
    fifty hits were read for nothing (a store read each, beyond the history).

    A thread the caches hold nothing of is no block: its hits are message blocks then, each at
    its own place. Those places come after its first hit's unless a later hit of the thread
    ranks higher (the bot's own messages come after people's whatever their score): such a
    thread is read up front, so the order is :func:`_blocks`' in every case.
    """
    # Entries (-relevance, hit position, first hit of a thread not yet read?): positions
    # are unique, so the order is (relevance descending, then hit order) as a stable sort's.
    pending: list[tuple[float, int, bool]] = []
    groups: dict[str, list[int]] = {}
    for position, hit in enumerate(hits):
        if _threaded(hit.message):
            groups.setdefault(hit.message.root_ts, []).append(position)
        else:
            pending.append((-relevance[position], position, False))
    read: dict[str, list[Message]] = {}
    for root_ts, members in groups.items():
        first = members[0]
        if any(relevance[other] > relevance[first] for other in members[1:]):
            read[root_ts] = thread = get_thread(root_ts)
            if not thread:
                pending += [(-relevance[p], p, False) for p in members]
                continue
        pending.append((-relevance[first], first, True))
    heapq.heapify(pending)
    while pending:
        _, position, first_of_thread = heapq.heappop(pending)
        message = hits[position].message
        if first_of_thread:
            root_ts = message.root_ts
            thread = read[root_ts] if root_ts in read else get_thread(root_ts)
            if thread:
                yield _thread_block(message, thread, channel_label, names), relevance[position]
                continue
            for other in groups[root_ts][1:]:
                heapq.heappush(pending, (-relevance[other], other, False))
        yield _message_block(message, channel_label, names), relevance[position]


def _scored_extras(
    query: str, found: Sequence[tuple[_Block, float]], extra: Sequence[ExtraBlock]
) -> list[tuple[_Block, float, bool]]:
    """``extra``'s relevance: its BM25 score over the candidates (found blocks and extras),
    divided by the best score among them, so it is comparable with how well the messages
    matched; unpinned blocks that match nothing are dropped."""
    if not extra:
        return []
    corpus = [terms(b.text) or ["\x00"] for b, _ in found] + [
        terms(e.text) or ["\x00"] for e in extra
    ]
    asked = terms(query)
    scores = BM25Okapi(corpus).get_scores(asked) if asked else [0.0] * len(corpus)
    best = max((float(v) for v in scores), default=0.0)
    out: list[tuple[_Block, float, bool]] = []
    for block, score in zip(extra, scores[len(found) :], strict=True):
        relevance = round(float(score) / best, 4) if best > 0 else 0.0
        if relevance > 0 or block.pinned:
            out.append(
                (_Block(block.block_id, block.block_type, block.source, block.text), relevance,
                 block.pinned)
            )  # fmt: skip
    return out


def _pins(
    pinned: Sequence[Message], channel_label: str, names: Names, scored: dict[str, float]
) -> list[tuple[_Block, float, bool]]:
    return [
        (
            _Block(f"message:{m.channel}:{m.ts}", "message",
                   f"{channel_label} {iso_from_ts(m.ts)} (pinned)", _line(m, names)),
            scored.get(f"message:{m.channel}:{m.ts}", 0.0),
            True,
        )
        for m in pinned
        if not m.deleted
    ]  # fmt: skip


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
    extra: Sequence[ExtraBlock] = (),
    should_stop: Callable[[], bool] | None = None,
) -> QueryResult:
    """The channel's best blocks for ``query`` within ``token_budget`` tokens of ``rendered``.

    ``thread_of``: a thread's messages (root first) from what is cached: no Slack call here.
    ``pinned``: the channel's pinned messages: message blocks that come first, whatever the
    query (their relevance is still the search's, 0 when it did not find them).
    ``extra``: file, recipe and playbook blocks (see the module's docstring).
    ``timeout_ms`` / ``should_stop``: packing ends when either says so; the answer is what was
    packed by then, with ``timed_out`` set.
    """
    started = time.monotonic()
    deadline = started + timeout_ms / 1000 if timeout_ms is not None else None

    def stop() -> bool:
        late = deadline is not None and time.monotonic() > deadline
        return late or (should_stop is not None and should_stop())

    wanted = set(type_filters) if type_filters else set(BLOCK_TYPES)
    hits, relevance = _hits(scope, query, names)
    ordered: Iterable[tuple[_Block, float, bool]]
    if extra or (pinned and "message" in wanted):
        # Extras are scored against every block's text, pins placed by every block's id.
        searched = _blocks(hits, relevance, channel_label, names, thread_of)
        found = [(b, r, False) for b, r in searched if b.block_type in wanted]
        found += [
            item for item in _scored_extras(query, searched, extra) if item[0].block_type in wanted
        ]
        if pinned and "message" in wanted:
            pins = _pins(pinned, channel_label, names, {b.block_id: r for b, r, _ in found})
            ids = {b.block_id for b, _, _ in pins}
            found = pins + [item for item in found if item[0].block_id not in ids]
        # The optimizer's order: pinned first, then relevance (stable).
        ordered = sorted(found, key=lambda item: (not item[2], -item[1]))
    else:
        ordered = (
            (b, r, False)
            for b, r in _blocks_by_relevance(hits, relevance, channel_label, names, thread_of)
            if b.block_type in wanted
        )
    frame = 2 if fmt == "json" else 0  # "[" and "]"

    def cost(chunk: Chunk[_Block], text: str) -> int:
        return counter.count(_fragment(chunk.item, text, fmt))

    # ``pack`` takes the blocks lazily, so a stop request ends the packing at the next block.
    stopped = False

    def candidates() -> Iterator[Chunk[_Block]]:
        nonlocal stopped
        for b, r, p in ordered:
            if stop():
                stopped = True
                return
            yield Chunk(key=b.block_id, text=b.text, item=b, relevance=r, pinned=p)

    packing = pack(candidates(), budget=max(token_budget - frame, 0), cost=cost)
    chunks: list[QueryChunk] = []
    for p in packing.included:
        tokens = counter.count(p.text)
        chunks.append(
            QueryChunk(
                block_id=p.chunk.item.block_id,
                block_type=p.chunk.item.block_type,
                source=p.chunk.item.source,
                text=p.text,
                tokens=tokens,
                relevance=p.chunk.relevance,
                pinned=p.chunk.pinned,
                truncated=p.truncated,
                original_tokens=counter.count(p.chunk.text) if p.truncated else tokens,
            )
        )
    rendered = render(chunks, fmt)
    # Summed fragments estimate the whole; the whole decides (drop the last block until it fits).
    total = counter.count(rendered)
    while chunks and total > token_budget:
        chunks = chunks[:-1]
        rendered = render(chunks, fmt)
        total = counter.count(rendered)
    return QueryResult(
        chunks=chunks,
        rendered=rendered,
        total_tokens=total,
        truncated_count=sum(1 for c in chunks if c.truncated),
        timed_out=stopped,
    )
