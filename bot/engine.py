"""The context engine: events in, caches kept current, context built for a mention.

The Bolt listeners (and the offline commands) feed every event to ``ContextEngine.handle``;
when a mention needs an answer, ``ContextEngine.context_for`` builds its ChannelSnapshot and
ThreadContext from the caches alone: no Slack API call in steady state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cache import ChannelHistory
from context import (
    DEFAULT_ADJACENT_WINDOW,
    DEFAULT_SNAPSHOT_BUDGET,
    DEFAULT_THREAD_BUDGET,
    ChannelSnapshot,
    Message,
    Names,
    ThreadContext,
    TokenCounter,
    build_channel_snapshot,
    build_thread_context,
    default_counter,
    wire_json,
)

from .intake import Delete, Edit, IntakeAction, React, Record, SelfIdentity, intake

__all__ = ["BuiltContext", "ContextEngine", "ContextSettings"]


@dataclass(frozen=True)
class ContextSettings:
    thread_budget: int = DEFAULT_THREAD_BUDGET
    snapshot_budget: int = DEFAULT_SNAPSHOT_BUDGET
    window: int = DEFAULT_ADJACENT_WINDOW


@dataclass(frozen=True)
class BuiltContext:
    anchor: Message
    snapshot: ChannelSnapshot
    thread: ThreadContext | None
    snapshot_tokens: int
    thread_tokens: int


@dataclass
class ContextEngine:
    me: SelfIdentity
    names: Names = field(default_factory=Names)
    settings: ContextSettings = field(default_factory=ContextSettings)
    history: ChannelHistory = field(default_factory=ChannelHistory)
    counter: TokenCounter = field(default_factory=default_counter)

    def handle(self, event: Mapping[str, Any]) -> IntakeAction:
        """Apply one Slack event to the caches; returns what it meant."""
        action = intake(event, self.me)
        if isinstance(action, Record):
            self.history.record(action.message)
        elif isinstance(action, Edit):
            self.history.apply_edit(
                action.channel,
                action.ts,
                text=action.text,
                edited_ts=action.edited_ts,
                files=action.files,
            )
        elif isinstance(action, Delete):
            self.history.delete(action.channel, action.ts)
        elif isinstance(action, React):
            change = self.history.add_reaction if action.added else self.history.remove_reaction
            change(action.channel, action.ts, action.name, action.user)
        return action

    def context_for(self, channel: str, ts: str) -> BuiltContext | None:
        """Snapshot + thread context for the message at (channel, ts), from the caches."""
        anchor = self.history.get(channel, ts)
        if anchor is None:
            return None
        snapshot = build_channel_snapshot(
            anchor,
            self.history.timeline(channel),
            channel_name=self.names.channels.get(channel, channel),
            window=self.settings.window,
            budget_tokens=self.settings.snapshot_budget,
            counter=self.counter,
            names=self.names,
            replies_of=lambda thread_ts: self.history.replies(channel, thread_ts),
        )
        thread = None
        root = self.history.get(channel, anchor.root_ts)
        # The anchor is in the snapshot in full; repeating it as a reply only costs tokens.
        replies = [r for r in self.history.replies(channel, anchor.root_ts) if r.ts != anchor.ts]
        if root is not None and (anchor.thread_ts or replies):
            thread = build_thread_context(
                root,
                replies,
                budget_tokens=self.settings.thread_budget,
                counter=self.counter,
                names=self.names,
            )
        return BuiltContext(
            anchor=anchor,
            snapshot=snapshot,
            thread=thread,
            snapshot_tokens=self.counter.count(wire_json(snapshot)),
            thread_tokens=self.counter.count(wire_json(thread)) if thread else 0,
        )
