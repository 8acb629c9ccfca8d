"""The context engine: events in, caches kept current, context built for a mention.

The Bolt middleware (and the offline commands) feed every event to ``ContextEngine.handle``;
when a mention needs an answer, ``ContextEngine.context_for`` builds its ChannelSnapshot and
ThreadContext from the caches. Slack is asked only when the caches cannot know: once per channel
after a (re)start for its recent history, and once per thread whose replies were never seen.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cachetools import TTLCache
from chanctx.bot.slack.intake import Delete, Edit, IntakeAction, React, Record, SelfIdentity, intake
from chanctx.cache import ChannelHistory, RateLimited, ThreadReplyCache
from chanctx.context import (
    DEFAULT_ADJACENT_WINDOW,
    DEFAULT_SNAPSHOT_BUDGET,
    DEFAULT_THREAD_BUDGET,
    ChanctxError,
    ChannelSnapshot,
    FileRef,
    Message,
    Names,
    ThreadContext,
    TokenCounter,
    build_channel_snapshot,
    build_thread_context,
    default_counter,
    wire_json,
)

__all__ = ["BuiltContext", "ContextEngine", "ContextSettings", "SlackSource"]

logger = logging.getLogger("chanctx.engine")


class SlackSource(Protocol):
    """What the engine needs from the Slack Web API (``bot.slack_api.SlackFetcher``)."""

    def fetch_thread(self, channel: str, thread_ts: str) -> Sequence[Message]: ...
    def fetch_message(self, channel: str, ts: str) -> Message | None: ...
    def channel_history(self, channel: str, *, limit: int = ...) -> list[Message]: ...
    def user_name(self, user_id: str) -> str: ...
    def channel_name(self, channel_id: str) -> str: ...


@dataclass(frozen=True)
class ContextSettings:
    thread_budget: int = DEFAULT_THREAD_BUDGET
    snapshot_budget: int = DEFAULT_SNAPSHOT_BUDGET
    window: int = DEFAULT_ADJACENT_WINDOW
    cold_start_messages: int = 200


@dataclass(frozen=True)
class BuiltContext:
    anchor: Message
    snapshot: ChannelSnapshot
    thread: ThreadContext | None
    snapshot_tokens: int
    thread_tokens: int
    # Said to the reader when the context may be incomplete (e.g. served stale under a limit).
    notes: tuple[str, ...] = ()


class _LazyNames(Mapping[str, str]):
    """Display names resolved on first use (users.info / conversations.info, cached there)."""

    def __init__(self, known: Mapping[str, str], resolve: Any, prefixes: tuple[str, ...]) -> None:
        self._known = dict(known)
        self._resolve = resolve
        self._prefixes = prefixes

    def __getitem__(self, key: str) -> str:
        if key in self._known:
            return self._known[key]
        if self._resolve is None or not key.startswith(self._prefixes):
            raise KeyError(key)
        name = str(self._resolve(key))
        if not name or name == key:  # the lookup failed: let callers fall back
            raise KeyError(key)
        self._known[key] = name
        return name

    def __iter__(self) -> Iterator[str]:
        return iter(self._known)

    def __len__(self) -> int:
        return len(self._known)


@dataclass
class ContextEngine:
    me: SelfIdentity
    names: Names = field(default_factory=Names)
    settings: ContextSettings = field(default_factory=ContextSettings)
    history: ChannelHistory = field(default_factory=ChannelHistory)
    counter: TokenCounter = field(default_factory=default_counter)
    slack: SlackSource | None = None
    threads: ThreadReplyCache | None = None
    _warm: set[str] = field(default_factory=set)
    # Every cache read and write holds this lock; no Slack call ever does, so a rate-limit
    # wait in one answer never blocks intake of other events.
    _lock: threading.RLock = field(default_factory=threading.RLock)
    # Deletions seen recently: a fetch that raced a deletion must not bring the message back.
    _deleted: TTLCache[tuple[str, str], bool] = field(
        default_factory=lambda: TTLCache(maxsize=10_000, ttl=3600)
    )

    def __post_init__(self) -> None:
        if self.slack is not None:
            self.names = Names(
                users=_LazyNames(self.names.users, self.slack.user_name, ("U", "W")),
                channels=_LazyNames(self.names.channels, self.slack.channel_name, ("C", "G", "D")),
            )
            if self.threads is None:
                self.threads = ThreadReplyCache(self.slack)

    def handle(self, event: Mapping[str, Any]) -> IntakeAction:
        """Apply one Slack event to the caches; returns what it meant."""
        action = intake(event, self.me)
        with self._lock:
            self._apply(action)
        return action

    def _apply(self, action: IntakeAction) -> None:
        if isinstance(action, Record) and action.only_if_new:
            self._adopt([action.message])
        elif isinstance(action, Record):
            self.history.record(action.message)
            if self.threads is not None:
                self.threads.on_message(action.message)
        elif isinstance(action, Edit):
            self.history.apply_edit(
                action.channel,
                action.ts,
                text=action.text,
                edited_ts=action.edited_ts,
                files=action.files,
            )
            if self.threads is not None:
                self.threads.on_edit(
                    action.channel, action.ts, text=action.text, edited_ts=action.edited_ts
                )
        elif isinstance(action, Delete):
            self._deleted[(action.channel, action.ts)] = True
            self.history.delete(action.channel, action.ts)
            if self.threads is not None:
                self.threads.on_delete(action.channel, action.ts)
        elif isinstance(action, React):
            change = self.history.add_reaction if action.added else self.history.remove_reaction
            change(action.channel, action.ts, action.name, action.user)

    # -- filling the caches from Slack when they cannot know -----------------------------
    # Pattern: decide under the lock, call Slack without it, adopt the answer under it again.

    def _adopt(self, messages: Sequence[Message]) -> None:
        """Record fetched messages the event stream has not already given us fresher."""
        with self._lock:
            for message in messages:
                known = self.history.get(message.channel, message.ts) is not None
                if not known and (message.channel, message.ts) not in self._deleted:
                    self.history.record(message)

    def warm_channel(self, channel: str) -> None:
        """Load a channel's recent history once after a start (one conversations.history)."""
        self._warm_channel(channel)

    def _warm_channel(self, channel: str) -> None:
        if self.slack is None:
            return
        with self._lock:
            if channel in self._warm:
                return
            self._warm.add(channel)
        self._adopt(self.slack.channel_history(channel, limit=self.settings.cold_start_messages))

    def _thread_is_complete(self, channel: str, root_ts: str) -> bool:
        with self._lock:
            root = self.history.get(channel, root_ts)
            if root is not None and root.reply_count <= len(self.history.replies(channel, root_ts)):
                return True
            # Fetched within the TTL: events have kept it current since.
            return self.threads is not None and self.threads.peek(channel, root_ts) is not None

    def _complete_thread(self, channel: str, root_ts: str, notes: list[str]) -> None:
        """Fetch a thread once if the caches do not hold all of it."""
        if self.slack is None or self.threads is None or self._thread_is_complete(channel, root_ts):
            return
        try:
            rows = self.slack.fetch_thread(channel, root_ts)
        except RateLimited as limited:
            notes.append(
                f"Slack rate limit on {limited.method}: this thread may be missing replies "
                f"older than those seen live (retry in {limited.retry_after:.0f}s)."
            )
            return
        except ChanctxError as error:
            notes.append(f"Could not fetch the whole thread from Slack: {error}")
            return
        with self._lock:
            cached = self.threads.store(channel, root_ts, rows)
        self._adopt(([cached.root] if cached.root else []) + list(cached.replies))

    def _anchor(self, channel: str, ts: str) -> Message | None:
        with self._lock:
            anchor = self.history.get(channel, ts)
        if anchor is None and self.slack is not None:
            fetched = self.slack.fetch_message(channel, ts)
            if fetched is not None:
                self._adopt([fetched])
                anchor = fetched
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
                self.history.get(channel, thread_ts),
                self.history.replies(channel, thread_ts),
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
        with self._lock:
            return self.history.get(channel, ts)

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
        if anchor.thread_ts:
            self._complete_thread(channel, anchor.root_ts, notes)
        around = viewed or channel
        if viewed:
            self._warm_channel(viewed)
        # Build from copies taken under the lock; display names may call Slack, so the
        # builders themselves run without it.
        with self._lock:
            timeline = self.history.timeline(around)
            root = self.history.get(channel, anchor.root_ts)
            replies = self.history.replies(channel, anchor.root_ts)
        snapshot = build_channel_snapshot(
            # In the pane the question is placed in the viewed channel, at its own time.
            anchor.model_copy(update={"channel": viewed, "thread_ts": None}) if viewed else anchor,
            timeline,
            channel_name=self.names.channels.get(around, around),
            window=settings.window,
            budget_tokens=settings.snapshot_budget,
            counter=self.counter,
            names=self.names,
            replies_of=lambda thread_ts: self._replies(around, thread_ts),
        )
        thread = None
        # The anchor is in the snapshot in full; repeating it as a reply only costs tokens.
        replies = [r for r in replies if r.ts != anchor.ts]
        if root is not None and (anchor.thread_ts or replies):
            thread = build_thread_context(
                root,
                replies,
                budget_tokens=settings.thread_budget,
                counter=self.counter,
                names=self.names,
            )
        return BuiltContext(
            anchor=anchor,
            snapshot=snapshot,
            thread=thread,
            snapshot_tokens=self.counter.count(wire_json(snapshot)),
            thread_tokens=self.counter.count(wire_json(thread)) if thread else 0,
            notes=tuple(notes),
        )
