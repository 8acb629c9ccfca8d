"""ThreadStarterCache: the root message of a thread, for replies whose root is not in history.

A reply event does not carry its root. When ChannelHistory no longer holds the root (it is older
than the window, or the bot just started), this answers from a 6-hour TTL cache and only asks
the platform (``conversations.history`` with ``latest=ts, inclusive``) on a miss.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from cachetools import Cache, TTLCache
from chanctx.cache._clock import Clock, check_ttl
from chanctx.cache._history import check_positive_int
from chanctx.cache._message_updates import edited, merge_root, tombstone, with_new_reply
from chanctx.cache._ts_keys import ts_key
from chanctx.context import Message

__all__ = ["MessageFetcher", "ThreadStarterCache"]


class MessageFetcher(Protocol):
    """The platform edge: one message by ts, or None if it does not exist. May raise."""

    def fetch_message(self, channel: str, ts: str) -> Message | None: ...


@dataclass(slots=True)
class _Slot:
    # A mutable holder, so edits replace the message without resetting the entry's TTL.
    msg: Message


_StarterKey = tuple[str, int]


class ThreadStarterCache:
    """TTL + LRU cache of thread roots keyed by (channel, ts), written through from events.

    A None answer from the fetcher is not cached (the root may appear, or the call may have
    been a transient miss). Counters ``hits``, ``misses``, ``fetches``. Not thread-safe.
    """

    def __init__(
        self,
        fetcher: MessageFetcher,
        *,
        ttl_seconds: float = 6 * 3600,
        max_entries: int = 2000,
        clock: Clock = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._cache: TTLCache[_StarterKey, _Slot] = TTLCache(
            maxsize=check_positive_int("max_entries", max_entries),
            ttl=check_ttl("ttl_seconds", ttl_seconds),
            timer=clock,
        )
        self.hits = 0
        self.misses = 0
        self.fetches = 0

    def get(self, channel: str, thread_ts: str) -> Message | None:
        """The thread's root: cached, or fetched on a miss. Fetch errors propagate."""
        key = (channel, ts_key(thread_ts))
        slot = self._cache.get(key)
        if slot is not None:
            self.hits += 1
            return slot.msg
        self.misses += 1
        self.fetches += 1
        msg = self._fetcher.fetch_message(channel, thread_ts)
        if msg is not None:
            self._cache[key] = _Slot(msg)
        return msg

    def peek(self, channel: str, thread_ts: str) -> Message | None:
        """The cached root without fetching, counting, or touching its LRU position."""
        slot = self._peek((channel, ts_key(thread_ts)))
        return None if slot is None else slot.msg

    def put(self, msg: Message) -> bool:
        """Store a root seen in an event (a fresh copy: its TTL restarts). Replies are ignored.

        Thread metadata already cached (``reply_count`` ...) is kept if fresher than the event's.
        Returns False for a reply, which cannot start a thread.
        """
        if msg.is_reply:
            return False
        key = (msg.channel, ts_key(msg.ts))
        old = self._peek(key)
        self._cache[key] = _Slot(merge_root(msg, None if old is None else old.msg, ()))
        return True

    def on_reply(self, reply: Message, known: int) -> None:
        """A reply arrived: advance its cached root's thread metadata (``known`` counts the
        replies known, it included), so the root still tells whether the thread is whole."""
        slot = self._peek((reply.channel, ts_key(reply.root_ts)))
        if slot is not None and reply.is_reply:
            slot.msg = with_new_reply(slot.msg, reply, known)

    def on_edit(self, channel: str, ts: str, *, text: str, edited_ts: str | None = None) -> None:
        """Apply an edit to a cached root (its TTL is unchanged)."""
        slot = self._peek((channel, ts_key(ts)))
        if slot is not None and not slot.msg.deleted:
            slot.msg = edited(slot.msg, text, edited_ts, None)

    def on_delete(self, channel: str, ts: str) -> None:
        """A deleted root with replies becomes a tombstone; one without is forgotten."""
        key = (channel, ts_key(ts))
        slot = self._peek(key)
        if slot is None:
            return
        if slot.msg.reply_count > 0:
            slot.msg = tombstone(slot.msg)
        else:
            self._cache.pop(key, None)

    def invalidate(self, channel: str, thread_ts: str) -> None:
        self._cache.pop((channel, ts_key(thread_ts)), None)

    def __len__(self) -> int:
        return len(self._cache)

    def _peek(self, key: _StarterKey) -> _Slot | None:
        if key not in self._cache:  # honours expiry, keeps LRU order
            return None
        return Cache.__getitem__(self._cache, key)
