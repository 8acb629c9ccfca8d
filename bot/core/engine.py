"""The context engine: events in, caches kept current, context built for a mention.

The Bolt middleware (and the offline commands) feed every event to ``ContextEngine.handle``;
when a mention needs an answer, ``ContextEngine.context_for`` builds its ChannelSnapshot and
ThreadContext from the caches. Slack is asked only when the caches cannot know: once per channel
after a (re)start for its recent history, and once per thread whose replies were never seen.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache
from chanctx.bot.core.built_context import BuiltContext, ContextSettings, assemble
from chanctx.bot.core.channel_record import ChannelRecord
from chanctx.bot.core.pins import ChannelPins
from chanctx.bot.core.slack_source import Learned, SlackSource, lazy_names, learn_name
from chanctx.bot.core.store_index import StoreIndexes
from chanctx.bot.core.thread_filling import ThreadFilling
from chanctx.bot.core.wait_budget import spend_wait, turn_wait_budget, wait_left
from chanctx.bot.core.warm_up import BackgroundWarmUps
from chanctx.bot.slack.intake import (
    Delete,
    Edit,
    Ignore,
    IntakeAction,
    Pin,
    React,
    Record,
    SelfIdentity,
    intake,
)
from chanctx.cache import (
    ChannelHistory,
    ThreadReplyCache,
    ThreadStarterCache,
)
from chanctx.context import (
    FileRef,
    Message,
    Names,
    TokenCounter,
    default_counter,
)
from chanctx.tools import IndexedHistory, SearchScope

__all__ = ["ContextEngine"]

logger = logging.getLogger("chanctx.engine")


_FAR_FUTURE = "9999999999.999999"  # "up to now" when no question bounds a thread fetch


@dataclass
class ContextEngine(ThreadFilling):
    me: SelfIdentity
    names: Names = field(default_factory=Names)
    settings: ContextSettings = field(default_factory=ContextSettings)
    history: ChannelHistory = field(default_factory=ChannelHistory)
    counter: TokenCounter = field(default_factory=default_counter)
    slack: SlackSource | None = None
    threads: ThreadReplyCache | None = None
    clock: Callable[[], float] = time.time  # replay gives its virtual clock
    # Thread roots for 6 h: a thread whose root left the history (its bounds, a
    # restart) is still known whole from its root's reply count, without a refetch.
    starters: ThreadStarterCache | None = None
    # Replicas: what this engine learns from Slack goes to the others (None: one process).
    learned: Learned | None = None
    # The durable channel store: every event is written there before it is acknowledged, and
    # a channel it holds is loaded from it after a restart (None: memory only).
    record: ChannelRecord | None = None
    # With a store: each channel's search index, built from everything stored (the history
    # holds only the recent window).
    indexes: StoreIndexes | None = field(default=None, init=False)
    # Loads from Slack in the background, an answer waiting at most --max-wait (None: inline).
    warm_ups: BackgroundWarmUps | None = None
    _warm: set[str] = field(default_factory=set)
    # Every cache read and write holds this lock; no Slack call ever does, so a rate-limit
    # wait in one answer never blocks intake of other events.
    _lock: threading.RLock = field(default_factory=threading.RLock)
    # Deletions seen recently: a fetch that raced a deletion must not bring the message back.
    _deleted: TTLCache[tuple[str, str], bool] = field(
        default_factory=lambda: TTLCache(maxsize=10_000, ttl=3600)
    )
    # Threads fetched only in part (newest first, under a rate limit): where the next fetch
    # resumes, going back towards the root.
    _partial: TTLCache[tuple[str, str], tuple[str | None, str | None]] = field(
        default_factory=lambda: TTLCache(maxsize=2_000, ttl=6 * 3600)
    )
    # Pinned messages per channel; answers do not use pins (only the query API does).
    _pins: ChannelPins = field(default_factory=ChannelPins)
    # When each whole thread was last fetched: within stale_serve_ttl it is served with a
    # note when a refresh fails.
    _fetched: TTLCache[tuple[str, str], float] = field(init=False)

    def __post_init__(self) -> None:
        self._fetched = TTLCache(maxsize=2_000, ttl=self.settings.stale_serve_ttl, timer=self.clock)
        if self.record is not None:  # names learned before this start: no users.info for them
            users, channels = self.record.names()
            self.names = Names(
                users={**users, **self.names.users}, channels={**channels, **self.names.channels}
            )
        if self.slack is not None:
            self.names = lazy_names(self.names, self.slack, self._tell_name)
            if self.threads is None:
                self.threads = ThreadReplyCache(self.slack)
            if self.starters is None:
                self.starters = ThreadStarterCache(self.slack, clock=self.clock)
        if self.record is not None and isinstance(self.history, IndexedHistory):
            self.indexes = StoreIndexes(
                self.record,
                max_bytes=self.history.max_bytes,
                held=self._held_messages,
                names=lambda: self.names,
                cached=lambda: self.history.bytes,
            )
            self.history.feed(self.indexes)

    def handle(self, event: Mapping[str, Any]) -> IntakeAction:
        """Store one Slack event (when there is a store: an OSError means it was not stored,
        so it must not be acknowledged), then apply it to the caches; returns what it meant."""
        action = intake(event, self.me)
        if self.record is not None:  # without the lock: concurrent events share one commit
            self.record.record(action, event)
        if isinstance(action, Ignore):
            self._forget(event)
        with self._lock:
            self._apply(action)
        return action

    def apply(self, action: IntakeAction, *, store: bool = True) -> None:
        """Apply what an event meant, decided by the replica that received it (``store``
        False: a store shared by the replicas holds it already)."""
        if self.record is not None and store:
            self.record.record(action)
        with self._lock:
            self._apply(action)

    def _forget(self, event: Mapping[str, Any]) -> None:
        """A deleted channel leaves the caches too (the store erased it already)."""
        channel = event.get("channel")
        if event.get("type") not in ("channel_deleted", "group_deleted") or not isinstance(
            channel, str
        ):
            return
        with self._lock:
            for message in self.history.messages(channel):
                self.history.delete(channel, message.ts)
                self._deleted[(channel, message.ts)] = True
            self._warm.discard(channel)
        if self.indexes is not None:
            self.indexes.drop(channel)

    def drop_cached(self, channel: str, ts: Sequence[str]) -> None:
        """Messages the store erased already (``chanctx forget``): out of every cache."""
        with self._lock:
            for one in ts:
                self._apply(Delete(channel, one))

    # -- what other replicas learned from Slack (the change stream) ------------------------

    def _tell_name(self, kind: str, key: str, name: str) -> None:
        if self.learned is not None:
            self.learned.named(kind, key, name)
        if self.record is not None:
            self.record.named(kind, key, name)

    def learn_name(self, kind: str, key: str, name: str) -> None:
        learn_name(self.names, kind, key, name)

    def learn_warm(self, channel: str, messages: Sequence[Message]) -> None:
        """Another replica loaded this channel's recent history: no load here."""
        with self._lock:
            self._warm.add(channel)
        self._adopt(messages)

    def learn_thread(
        self,
        channel: str,
        root_ts: str,
        messages: Sequence[Message],
        *,
        complete: bool,
        partial: tuple[str | None, str | None] | None,
    ) -> None:
        """Another replica fetched (part of) this thread."""
        with self._lock:
            root = self._root(channel, root_ts)
        self._adopt_thread(channel, root_ts, root, messages, complete=complete, partial=partial)

    def learn_messages(self, messages: Sequence[Message]) -> None:
        self._adopt(messages)

    def forget_warmth(self) -> None:
        """History may have missed changes: each channel loads from Slack on its next use."""
        with self._lock:
            self._warm.clear()

    def _apply(self, action: IntakeAction) -> None:
        if isinstance(action, Record) and action.only_if_new:
            self._adopt([action.message])
        elif isinstance(action, Record):
            self.history.record(action.message)
            message = action.message
            # A reply advances its root's reply count: the starter cache keeps that copy, or
            # advances its own when the root has left the history.
            root = (
                self.history.get(message.channel, message.root_ts) if message.is_reply else message
            )
            if root is not None:
                self._remember_root(root)
            elif self.starters is not None:
                known = len(self.history.replies(message.channel, message.root_ts))
                self.starters.on_reply(message, known)
            if self.threads is not None:
                self.threads.on_message(action.message)
        elif isinstance(action, Edit):
            held = self.history.apply_edit(
                action.channel,
                action.ts,
                text=action.text,
                edited_ts=action.edited_ts,
                files=action.files,
            )
            self._unheld(held, action.channel, action.ts)
            if self.threads is not None:
                self.threads.on_edit(
                    action.channel, action.ts, text=action.text, edited_ts=action.edited_ts
                )
            if self.starters is not None:
                self.starters.on_edit(
                    action.channel, action.ts, text=action.text, edited_ts=action.edited_ts
                )
        elif isinstance(action, Delete):
            self._deleted[(action.channel, action.ts)] = True
            self._unheld(self.history.delete(action.channel, action.ts), action.channel, action.ts)
            if self.threads is not None:
                self.threads.on_delete(action.channel, action.ts)
            if self.starters is not None:
                self.starters.on_delete(action.channel, action.ts)
        elif isinstance(action, React):
            change = self.history.add_reaction if action.added else self.history.remove_reaction
            held = change(action.channel, action.ts, action.name, action.user)
            self._unheld(held, action.channel, action.ts)
        elif isinstance(action, Pin):
            self._pin(action)

    def _unheld(self, held: Message | None, channel: str, ts: str) -> None:
        """A change to a message the history does not hold (older than its window) still
        reaches the channel's index, from the store's copy."""
        if held is None and self.indexes is not None:
            self.indexes.reload(channel, ts)

    def _held_messages(self, channel: str) -> list[Message]:
        with self._lock:
            return self.history.messages(channel)

    def search_scope(
        self, channel: str, *, hidden: frozenset[str], held: frozenset[str]
    ) -> SearchScope | None:
        """The channel's index built from the store (None without a store): waits for its
        build at most what the answer may still wait."""
        if self.indexes is None:
            return None
        self.indexes.start(channel)  # first, so the recent messages loaded next join it
        self._warm_channel(channel)
        wait = wait_left(self.settings.max_wait_seconds)
        return self.indexes.scope(channel, hidden=hidden, held=held, wait=wait)

    def _pin(self, action: Pin) -> None:
        if self._pins.on_pin(action):
            self._adopt([action.message])

    def pinned(self, channel: str) -> list[Message]:
        """The channel's pinned messages, as history now holds them (edits included): pins
        made before this start come from one pins.list a channel and process."""
        if self.slack is not None and self._pins.first_look(channel):
            pinned = self.slack.pinned_messages(channel)
            self._pins.listed(channel, pinned)
            self._adopt(pinned)
        with self._lock:
            return [self.history.get(channel, m.ts) or m for m in self._pins.of(channel)]

    # -- filling the caches from Slack when they cannot know -----------------------------
    # Pattern: decide under the lock, call Slack without it, adopt the answer under it again.

    def warm_channel(self, channel: str) -> None:
        """Load a channel's recent history once after a start (one conversations.history)."""
        self._warm_channel(channel)

    def _warm_channel(self, channel: str) -> None:
        if self.slack is None and self.record is None:
            return
        with self._lock:
            if channel in self._warm:
                return
            self._warm.add(channel)
        after = None
        if self.record is not None and self.record.knows_history(channel):
            # Stored: the newest messages the history may hold, no Slack call.
            limit = self.history.max_messages_per_channel
            self._adopt(self.record.recent(channel, limit))
            after = self.record.gap_after(channel)  # held from an import: read what is newer
            if after is None:
                return
        if self.slack is None:
            return
        if self.warm_ups is not None:
            budget = wait_left(self.settings.max_wait_seconds)
            fetch = lambda: self._warm_from_slack(channel, after)  # noqa: E731
            spend_wait(self.warm_ups.run(channel, fetch, budget))
            return
        self._warm_from_slack(channel, after)

    def _warm_from_slack(self, channel: str, after: str | None = None) -> None:
        assert self.slack is not None
        limit = self.settings.cold_start_messages
        try:
            messages = self.slack.channel_history(channel, limit=limit, oldest=after)
        except Exception:
            if self.warm_ups is not None:  # in the background: the next use tries again
                with self._lock:
                    self._warm.discard(channel)
            raise
        self._adopt(messages)
        if self.record is not None:
            self.record.warmed(channel, messages, limit=limit)
        if self.learned is not None:
            self.learned.warmed(channel, messages)

    def held(self, channel: str) -> int:
        """Messages of ``channel`` in memory (no Slack call)."""
        with self._lock:
            return self.history.count(channel)

    def thread_is_cached(self, channel: str, root_ts: str) -> bool:
        """True if ``thread`` would answer without a Slack fetch."""
        return (
            self.slack is None or self.threads is None or self._thread_is_complete(channel, root_ts)
        )

    def cached_replies(self, channel: str, root_ts: str) -> list[Message]:
        """The replies of a thread the caches hold: history's and the thread cache's (no fetch)."""
        with self._lock:
            return self._thread_replies(channel, root_ts)

    def cached_thread(self, channel: str, root_ts: str) -> list[Message]:
        """A thread as the caches hold it, root first (history, else the starter cache), no
        fetch: what the query API shows as a thread block."""
        with self._lock:
            root = self._root(channel, root_ts)
            replies = self._thread_replies(channel, root_ts)
        if root is None and not replies and self.record is not None:
            root, replies = self.record.thread(channel, root_ts)  # older than the history
        return ([root] if root else []) + replies

    def turn_wait_budget(self) -> AbstractContextManager[None]:
        """One answer's rate-limit waiting, shared by its context and every tool's fetch."""
        return turn_wait_budget(self.settings.max_wait_seconds)

    def _anchor(self, channel: str, ts: str) -> Message | None:
        with self._lock:
            anchor = self.history.get(channel, ts)
        if anchor is None and self.record is not None:
            stored = self.record.store.get(self.record.team, channel, ts)
            if stored is not None and not stored.deleted:
                self._adopt([stored])
                return stored
        if anchor is None and self.slack is not None:
            fetched = self.slack.fetch_message(channel, ts)
            if fetched is not None:
                self._adopt([fetched])
                anchor = fetched
                if self.record is not None:
                    self.record.fetched([fetched])
                if self.learned is not None:
                    self.learned.fetched([fetched])
        return anchor

    def _replies(self, channel: str, thread_ts: str) -> list[Message]:
        with self._lock:
            return self.history.replies(channel, thread_ts)

    # -- building ---------------------------------------------------------------------------

    def thread(
        self, channel: str, thread_ts: str
    ) -> tuple[Message | None, list[Message], list[str]]:
        """A whole thread (root, replies oldest first, notes), fetched once if never seen."""
        notes: list[str] = []
        self._complete_thread(channel, thread_ts, notes)
        with self._lock:
            return (
                self._root(channel, thread_ts),
                self._thread_replies(channel, thread_ts),
                notes,
            )

    def channel_messages(self, channel: str) -> list[Message]:
        """Every known message of a channel (what the search tool scans)."""
        self._warm_channel(channel)
        with self._lock:
            return self.history.messages(channel)

    def find_file(self, channel: str, artifact_id: str) -> tuple[Message, FileRef] | None:
        """The message of this channel that shared ``artifact_id``, and the file."""
        with self._lock:
            for message in self.history.messages(channel):
                for ref in message.files:
                    if ref.artifact_id == artifact_id:
                        return message, ref
        return None

    def message(self, channel: str, ts: str) -> Message | None:
        """One message: the history's copy, else the store's (older than the history)."""
        with self._lock:
            found = self.history.get(channel, ts)
        if found is None and self.record is not None:
            stored = self.record.store.get(self.record.team, channel, ts)
            found = stored if stored is not None and not stored.deleted else None
        return found

    def replies_since(self, channel: str, thread_ts: str, after_ts: str | None) -> list[Message]:
        """Replies in a thread newer than ``after_ts``: what others said since our last turn."""
        with self._lock:
            replies = self.history.replies(channel, thread_ts)
        if after_ts is None:
            return replies
        return [r for r in replies if float(r.ts) > float(after_ts)]

    def context_for(
        self,
        channel: str,
        ts: str,
        *,
        settings: ContextSettings | None = None,
        viewed: str | None = None,
    ) -> BuiltContext | None:
        """Snapshot + thread context for the message at (channel, ts).

        ``viewed``: the channel a user is looking at while asking in the assistant pane (a DM).
        The thread context stays the pane's conversation; the snapshot is of ``viewed``, its
        newest messages around the question, so "what broke?" is about that channel.
        """
        settings = settings or self.settings
        notes: list[str] = []
        self._warm_channel(channel)
        anchor = self._anchor(channel, ts)
        if anchor is None:
            return None
        waited = 0.0
        if anchor.thread_ts:
            waited = self._complete_thread(channel, anchor.root_ts, notes, until=anchor.ts)
        around = viewed or channel
        if viewed:
            self._warm_channel(viewed)
        # Build from copies taken under the lock; display names may call Slack, so the
        # builders themselves run without it.
        with self._lock:
            timeline = self.history.timeline(around)
            root = self._root(channel, anchor.root_ts)
            replies = self._thread_replies(channel, anchor.root_ts)
        return assemble(
            anchor,
            timeline,
            root,
            replies,
            viewed=viewed,
            channel_name=self.names.channels.get(around, around),
            settings=settings,
            counter=self.counter,
            names=self.names,
            replies_of=lambda thread_ts: self._replies(around, thread_ts),
            notes=notes,
            waited=waited,
        )
