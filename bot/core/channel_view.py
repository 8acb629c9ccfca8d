"""The tools' view of one channel, over the engine's caches (and Slack, when a thread is unseen)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from chanctx.bot.core.engine import ContextEngine
from chanctx.context import Message
from chanctx.tools import IndexedHistory, SearchScope, ThreadLookup, synced_index

__all__ = ["EngineView"]


class EngineView:
    """Bound to one channel at creation: there is no argument that could name another."""

    def __init__(
        self,
        engine: ContextEngine,
        channel: str,
        *,
        hidden: Collection[str] = (),
        held: Collection[str] = (),
        fetch_budget: int | None = None,
    ) -> None:
        self._engine = engine
        self.channel = channel
        # Slack fetches this view may still make (one view per turn): a hostile or confused
        # turn cannot queue minutes of conversations.replies waits. None: no limit.
        self._fetches_left = fetch_budget
        self._fetch_limit = fetch_budget
        # Left out of search (the question being answered is already in the context), but
        # still fetchable by id.
        self._hidden = frozenset(hidden)
        # Held in full by the reader (the attached thread and snapshot): search names them by
        # ts instead of repeating them.
        self._held = frozenset(held)

    def messages(self) -> Sequence[Message]:
        found = self._engine.channel_messages(self.channel)
        return [m for m in found if m.ts not in self._hidden] if self._hidden else found

    def get(self, ts: str) -> Message | None:
        return self._engine.message(self.channel, ts)

    def thread(self, thread_ts: str) -> ThreadLookup:
        if self._fetches_left is not None and not self._engine.thread_is_cached(
            self.channel, thread_ts
        ):
            if self._fetches_left <= 0:
                return ThreadLookup(
                    root=self._engine.message(self.channel, thread_ts),
                    replies=self._engine.cached_replies(self.channel, thread_ts),
                    note=(
                        f"Not fetched from Slack: this answer already made {self._fetch_limit} "
                        "Slack fetches, the limit per answer; only the replies seen live are "
                        "shown. Answer with what you have."
                    ),
                )
            self._fetches_left -= 1
        root, replies, notes = self._engine.thread(self.channel, thread_ts)
        return ThreadLookup(root=root, replies=replies, note=" ".join(notes) or None)

    def search_index(self) -> SearchScope:
        """The channel's search index: built from the channel store when there is one (all
        stored messages), else the history's own (an IndexedHistory), else one kept per
        history and synced from channel_messages() on each search."""
        stored = self._engine.search_scope(self.channel, hidden=self._hidden, held=self._held)
        if stored is not None:
            return stored
        history = self._engine.history
        if isinstance(history, IndexedHistory):
            self._engine.warm_channel(self.channel)  # as messages() does; once per channel
            return SearchScope(
                history.search_index(self.channel), hidden=self._hidden, held=self._held
            )
        return SearchScope(
            synced_index(history, self.channel),
            hidden=self._hidden,
            held=self._held,
            messages=lambda: self._engine.channel_messages(self.channel),
        )
