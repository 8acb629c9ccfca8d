"""ThreadReplyCache: whole threads, fetched once and then kept current from events.

Without it every reply in a thread would cost a ``conversations.replies`` call. A thread is
fetched on a miss or after its TTL; in between, replies arriving as events are appended in
place. Appending does not extend the TTL, so the periodic full refetch heals any missed event.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from cachetools import Cache, TTLCache
from chanctx.cache._clock import Clock, check_ttl
from chanctx.cache._history import check_positive_int
from chanctx.cache._message_updates import (
    edited,
    merge_root,
    tombstone,
    with_new_reply,
    without_reply,
)
from chanctx.cache._ts_keys import raw_ts_key, ts_key
from chanctx.context import Message

__all__ = ["CachedThread", "ThreadFetcher", "ThreadReplyCache"]


class ThreadFetcher(Protocol):
    """The platform edge (``conversations.replies`` on Slack). May raise."""

    def fetch_thread(self, channel: str, thread_ts: str) -> Sequence[Message]:
        """The thread's root first, then its replies."""
        ...


@dataclass
class CachedThread:
    """One cached thread. ``replies`` are oldest to newest with no duplicate ts."""

    channel: str
    thread_ts: str
    root: Message | None
    replies: list[Message] = field(default_factory=list)
    fetched_at: float = 0.0

    @property
    def messages(self) -> list[Message]:
        """Root (if known) followed by the replies: the whole thread in reading order."""
        return ([self.root] if self.root is not None else []) + self.replies


def _position(replies: list[Message], key: int) -> tuple[int, bool]:
    """Where ``key`` is (True) or would be inserted (False) in the ts-ordered ``replies``."""
    index = bisect_left(replies, key, key=lambda m: raw_ts_key(m.ts))
    return index, index < len(replies) and raw_ts_key(replies[index].ts) == key


_ThreadKey = tuple[str, int]


class ThreadReplyCache:
    """TTL + LRU cache of whole threads keyed by (channel, thread ts), written through from events.

    Counters ``hits``, ``misses`` and ``fetches`` count ``get`` outcomes and fetcher calls.
    Not thread-safe.
    """

    def __init__(
        self,
        fetcher: ThreadFetcher,
        *,
        ttl_seconds: float = 300,
        max_threads: int = 500,
        clock: Clock = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._clock = clock
        self._cache: TTLCache[_ThreadKey, CachedThread] = TTLCache(
            maxsize=check_positive_int("max_threads", max_threads),
            ttl=check_ttl("ttl_seconds", ttl_seconds),
            timer=clock,
        )
        self.hits = 0
        self.misses = 0
        self.fetches = 0

    def get(self, channel: str, thread_ts: str) -> CachedThread:
        """The cached thread, else one full fetch (miss or expired); fetch errors propagate."""
        key = (channel, ts_key(thread_ts))
        entry = self._cache.get(key)
        if entry is not None:
            self.hits += 1
            return entry
        self.misses += 1
        self.fetches += 1
        return self.store(channel, thread_ts, self._fetcher.fetch_thread(channel, thread_ts))

    def store(self, channel: str, thread_ts: str, rows: Sequence[Message]) -> CachedThread:
        """Cache a thread fetched elsewhere (root first, then replies), starting its TTL.

        Callers that must not hold a lock across a network call fetch first, then store.
        """
        key = (channel, ts_key(thread_ts))
        entry = self._build(channel, thread_ts, key[1], rows)
        self._cache[key] = entry
        return entry

    def peek(self, channel: str, thread_ts: str) -> CachedThread | None:
        """The live cached thread without fetching, counting, or touching its LRU position."""
        return self._peek((channel, ts_key(thread_ts)))

    def on_message(self, msg: Message) -> bool:
        """Write a message event through; True if it touched a cached thread.

        A reply is inserted in ts order (a redelivered one replaces its old copy) and the root's
        thread metadata advanced; a root replaces the cached root. No fetch, no TTL extension.
        """
        entry = self._peek((msg.channel, raw_ts_key(msg.root_ts)))
        if entry is None:
            return False
        if not msg.is_reply:
            entry.root = merge_root(msg, entry.root, entry.replies)
            return True
        replies = entry.replies
        index, found = _position(replies, raw_ts_key(msg.ts))
        if found:
            replies[index] = msg
            return True
        replies.insert(index, msg)
        if entry.root is not None:
            entry.root = with_new_reply(entry.root, msg, len(replies))
        return True

    def on_edit(self, channel: str, ts: str, *, text: str, edited_ts: str | None = None) -> None:
        """Apply an edit to a cached root or reply, wherever it is cached."""
        key = ts_key(ts)
        for entry in self._live(channel):
            if (
                entry.root is not None
                and raw_ts_key(entry.root.ts) == key
                and not entry.root.deleted
            ):
                entry.root = edited(entry.root, text, edited_ts, None)
            index, found = _position(entry.replies, key)
            if found:
                entry.replies[index] = edited(entry.replies[index], text, edited_ts, None)

    def on_delete(self, channel: str, ts: str) -> None:
        """Apply a deletion: a reply leaves its thread; a root with replies becomes a tombstone."""
        key = ts_key(ts)
        for entry in self._live(channel):
            if (
                entry.root is not None
                and raw_ts_key(entry.root.ts) == key
                and not entry.root.deleted
            ):
                has_replies = entry.replies or entry.root.reply_count > 0
                entry.root = tombstone(entry.root) if has_replies else None
            index, found = _position(entry.replies, key)
            if found:
                gone = entry.replies.pop(index)
                if entry.root is not None:
                    root = without_reply(entry.root, gone, entry.replies)
                    gone_thread = root.deleted and root.reply_count == 0 and not entry.replies
                    entry.root = None if gone_thread else root

    def invalidate(self, channel: str, thread_ts: str) -> None:
        """Forget a thread; the next ``get`` fetches it again."""
        self._cache.pop((channel, ts_key(thread_ts)), None)

    def __len__(self) -> int:
        return len(self._cache)

    def _peek(self, key: _ThreadKey) -> CachedThread | None:
        if key not in self._cache:  # TTLCache.__contains__ honours expiry and keeps LRU order
            return None
        return Cache.__getitem__(self._cache, key)

    def _live(self, channel: str) -> list[CachedThread]:
        # Iterating a TTLCache skips expired entries; Cache.__getitem__ leaves LRU order alone.
        return [Cache.__getitem__(self._cache, k) for k in list(self._cache) if k[0] == channel]

    def _build(
        self, channel: str, thread_ts: str, root_key: int, rows: Sequence[Message]
    ) -> CachedThread:
        root: Message | None = None
        by_key: dict[int, Message] = {}
        for msg in rows:
            key = raw_ts_key(msg.ts)
            if key == root_key:
                root = msg
            elif msg.is_reply and raw_ts_key(msg.root_ts) == root_key:
                by_key[key] = msg  # a duplicate keeps the later copy
        replies = [by_key[k] for k in sorted(by_key)]
        return CachedThread(channel, thread_ts, root, replies, self._clock())
