"""Where a channel's search index comes from: fed by the cache on every write, or synced.

:class:`IndexedHistory` is a :class:`cache.ChannelHistory` that keeps one
:class:`~tools._index.ChannelIndex` per channel current on every write (record, edit, delete,
reaction, eviction): each write queues the changed messages in O(1) and the next search
tokenises them. That is what makes a search of a 100,000-message channel cost milliseconds: no
call lists the channel's messages. ``bot/launch/one_workspace.py`` runs the engine on one.

A view over a plain ChannelHistory (or any other view) gets an index synced from its
``messages()`` instead (:func:`synced_index`): one per (owner, channel, stemmer), kept for as
long as the owner lives, and brought up to date by a diff on each search.

With a durable store behind the history, the bot keeps the indexes elsewhere (built from the
store, holding more than the history does): :meth:`IndexedHistory.feed` sends every write to
that :class:`IndexSink` instead.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from chanctx.cache import ChannelHistory, ts_key
from chanctx.context import FileRef, Message, Names
from chanctx.tools._index import ChannelIndex
from chanctx.tools._keywords import Stemmer

__all__ = ["IndexSink", "IndexedHistory", "SearchScope", "synced_index"]


@dataclass(frozen=True)
class SearchScope:
    """A channel's index as a view serves it to ``channel_context``.

    ``hidden``: ts left out of search (the question being answered is already in the reader's
    context). ``held``: ts the reader already holds in full (the attached thread and
    snapshot): still ranked, but answered by ts only. ``messages``: for an index that is not
    fed by writes, where to sync it from before each search. ``extend``: for an index that
    holds only the newest part of a channel, called with the intent before each search to
    queue into the index the older messages that may match it.
    """

    index: ChannelIndex
    hidden: frozenset[str] = frozenset()
    held: frozenset[str] = frozenset()
    messages: Callable[[], Sequence[Message]] | None = None
    extend: Callable[[str], None] | None = None

    def prepare(self, intent: str, names: Names) -> None:
        """Bring the index up to date for a search of ``intent`` (caller holds its lock)."""
        if self.extend is not None:
            self.extend(intent)
        if self.messages is not None:
            self.index.sync(self.messages(), names)
        self.index.refresh(names)


class IndexSink(Protocol):
    """Where an :class:`IndexedHistory` sends its writes when another owner keeps the indexes
    (:meth:`IndexedHistory.feed`)."""

    def queue(self, channel: str, key: int, message: Message | None) -> None:
        """The message at ``key`` of ``channel`` is now ``message``; None: the history does not
        hold it (a thread root it never loaded), which is not a deletion; a tombstone (deleted)
        is one."""
        ...


_GONE = Message(channel="-", ts="0.0", deleted=True)  # what a sink is told for a deletion

_registry: weakref.WeakKeyDictionary[object, dict[tuple[str, Stemmer], ChannelIndex]] = (
    weakref.WeakKeyDictionary()
)
_registry_lock = threading.Lock()


def synced_index(owner: object, channel: str, stemmer: Stemmer = "porter") -> ChannelIndex:
    """The index of ``channel`` kept for ``owner`` (a history or a view), created empty.

    The caller syncs it (``ChannelIndex.sync``) from the owner's messages; it lives as long as
    the owner does.
    """
    with _registry_lock:
        indexes = _registry.setdefault(owner, {})
        index = indexes.get((channel, stemmer))
        if index is None:
            index = indexes[(channel, stemmer)] = ChannelIndex(channel, stemmer=stemmer)
        return index


class IndexedHistory(ChannelHistory):
    """A ChannelHistory that keeps each channel's search index current on every write.

    Behaves exactly like ChannelHistory (same bounds, same reads); every write also queues
    what it changed into the channel's :class:`ChannelIndex`: the message itself, the roots
    whose thread counters moved, the messages evicted by the bound. Not thread-safe, like
    ChannelHistory: write from one thread or behind a lock. Searching the index from another
    thread is safe (the index has its own locks).
    """

    def __init__(
        self,
        *,
        max_messages_per_channel: int = 5000,
        max_channels: int = 200,
        max_bytes: int = 1024 * 2**20,
        stemmer: Stemmer = "porter",
    ) -> None:
        super().__init__(
            max_messages_per_channel=max_messages_per_channel,
            max_channels=max_channels,
            max_bytes=max_bytes,
        )
        self.stemmer: Stemmer = stemmer
        self._indexes: dict[str, ChannelIndex] = {}
        self._sink: IndexSink | None = None

    def feed(self, sink: IndexSink) -> None:
        """Send every write to ``sink`` from now on instead of keeping indexes here: its
        indexes (built from a durable store) hold more than this history does, so a message
        the history evicts stays searchable, and a thread root the history does not hold is
        not a deleted one."""
        self._sink = sink
        self._indexes.clear()

    def search_index(self, channel: str) -> ChannelIndex:
        """The index of ``channel`` (an empty one for a channel never written)."""
        index = self._indexes.get(channel)
        return index if index is not None else ChannelIndex(channel, stemmer=self.stemmer)

    # -- writes: the parent's, then what changed goes to the index --------------------------

    def _recorded(self, channel: str, ch: Any, keys: Sequence[int]) -> None:
        # record() wrote these: the message and the roots it touched; queue what is stored now.
        if self._sink is not None:
            for key in keys:
                self._sink.queue(channel, key, ch.messages.get(key))
            return
        index = self._index(channel)
        for key in keys:
            index.queue(key, ch.messages.get(key))

    def apply_edit(
        self,
        channel: str,
        ts: str,
        *,
        text: str,
        edited_ts: str | None = None,
        files: tuple[FileRef, ...] | None = None,
    ) -> Message | None:
        updated = super().apply_edit(channel, ts, text=text, edited_ts=edited_ts, files=files)
        if updated is not None:
            self._changed(channel, [ts])
        return updated

    def delete(self, channel: str, ts: str) -> Message | None:
        gone = super().delete(channel, ts)
        if gone is not None:
            touched = [ts]
            if gone.is_reply and gone.thread_ts is not None:
                touched.append(gone.thread_ts)
            self._changed(channel, touched, deleted=ts)
        return gone

    def add_reaction(self, channel: str, ts: str, name: str, user: str) -> Message | None:
        updated = super().add_reaction(channel, ts, name, user)
        if updated is not None:
            self._changed(channel, [ts])
        return updated

    def remove_reaction(self, channel: str, ts: str, name: str, user: str) -> Message | None:
        updated = super().remove_reaction(channel, ts, name, user)
        if updated is not None:
            self._changed(channel, [ts])
        return updated

    def _index(self, channel: str) -> ChannelIndex:
        index = self._indexes.get(channel)
        if index is None:
            index = self._indexes[channel] = ChannelIndex(channel, stemmer=self.stemmer)
            if len(self._indexes) > self.max_channels:
                self._forget_evicted_channels()
        return index

    def _changed(self, channel: str, touched: Iterable[str], *, deleted: str | None = None) -> None:
        for ts in touched:
            key = self._stored_key(channel, ts) or ts_key(ts)
            message = self.get(channel, ts)
            if self._sink is not None:
                # The deleted message is gone; another one missing is only not held here.
                gone = message is None and ts == deleted
                self._sink.queue(channel, key, _GONE if gone else message)
            else:
                self._index(channel).queue(key, message)  # a tombstone or None leaves the index

    def _dropped(self, channel: str, key: int) -> None:
        # A bound evicts the oldest message of ``channel``: it leaves the index too (not a
        # sink's: the message is still stored, and still searched there).
        index = self._indexes.get(channel)
        if index is not None:
            index.queue(key, None)

    def _evicted(self, channel: str) -> None:
        # The byte bound took the oldest messages of another channel, or all of it.
        if channel in self._indexes and self.count(channel) == 0:
            del self._indexes[channel]

    def _forget_evicted_channels(self) -> None:
        held = set(self.channels())
        for channel in [c for c in self._indexes if c not in held]:
            del self._indexes[channel]
