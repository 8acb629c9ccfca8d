"""What the tools may see: one channel, through a protocol the platform edge implements.

The tools never receive a channel id as an argument; they hold a view that was bound to one
channel when the session was created. That is what makes scoping structural: there
is no code path from a tool argument to another channel's data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from chanctx.cache import ChannelHistory
from chanctx.context import Message
from chanctx.tools._indexed import IndexedHistory, SearchScope, synced_index

__all__ = ["ChannelView", "HistoryView", "SearchableView", "ThreadLookup"]


@dataclass(frozen=True)
class ThreadLookup:
    """A thread as the view knows it. ``note`` explains a degraded answer (stale, partial)."""

    root: Message | None
    replies: Sequence[Message]
    note: str | None = None


@runtime_checkable
class ChannelView(Protocol):
    """Read access to exactly one channel. ``bot/`` implements it over its caches."""

    @property
    def channel(self) -> str:
        """The one channel this view can see."""
        ...

    def messages(self) -> Sequence[Message]:
        """Every known message of the channel (top-level and replies), oldest to newest."""
        ...

    def get(self, ts: str) -> Message | None:
        """One message of this channel, or None."""
        ...

    def thread(self, thread_ts: str) -> ThreadLookup:
        """The root and replies of a thread of this channel; may cost one platform fetch."""
        ...


@runtime_checkable
class SearchableView(ChannelView, Protocol):
    """A ChannelView that also serves its channel's search index (optional for a view).

    ``channel_context`` then searches that index instead of indexing ``messages()`` itself;
    a view without it still works, through an index synced from ``messages()`` on each call.
    """

    def search_index(self) -> SearchScope | None:
        """The channel's search index, or None to let the tool index ``messages()``."""
        ...


class HistoryView:
    """A :class:`ChannelView` over an in-memory :class:`cache.ChannelHistory`; never fetches.

    For tests and offline use. Over an :class:`IndexedHistory` search reads the index the
    history keeps current; over a plain ChannelHistory it syncs one from ``messages()``.
    ``messages()`` is built from the history's public reads, so it
    holds the visible timeline plus the known replies of the threads rooted in it; replies of a
    deleted (tombstoned) or evicted root are not reachable that way and are left out.
    """

    def __init__(self, history: ChannelHistory, channel: str) -> None:
        self._history = history
        self._channel = channel

    @property
    def channel(self) -> str:
        return self._channel

    def messages(self) -> list[Message]:
        return self._history.messages(self._channel)

    def get(self, ts: str) -> Message | None:
        return self._history.get(self._channel, ts)

    def thread(self, thread_ts: str) -> ThreadLookup:
        return ThreadLookup(
            root=self._history.get(self._channel, thread_ts),
            replies=self._history.replies(self._channel, thread_ts),
        )

    def search_index(self) -> SearchScope:
        """The history's own index if it keeps one (IndexedHistory), else one synced from it."""
        if isinstance(self._history, IndexedHistory):
            return SearchScope(self._history.search_index(self._channel))
        return SearchScope(synced_index(self._history, self._channel), messages=self.messages)
