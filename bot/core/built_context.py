"""A turn's context: the settings it is built with (budgets, window, cold start, rate-limit
waiting) and what the engine built (the anchor, its ChannelSnapshot and ThreadContext, their
token counts, and notes for the reader when it may be incomplete)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chanctx.cache import ts_key
from chanctx.context import (
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
    wire_json,
)

__all__ = ["BuiltContext", "ContextSettings", "assemble"]


@dataclass(frozen=True)
class ContextSettings:
    thread_budget: int = DEFAULT_THREAD_BUDGET
    snapshot_budget: int = DEFAULT_SNAPSHOT_BUDGET
    window: int = DEFAULT_ADJACENT_WINDOW
    cold_start_messages: int = 200
    # Rate-limit seconds a turn may wait for a thread before answering with what it has.
    max_wait_seconds: float = 60.0
    # A thread fetched within this many seconds is served, with a note, when a refresh fails.
    stale_serve_ttl: float = 3600.0


@dataclass(frozen=True)
class BuiltContext:
    anchor: Message
    snapshot: ChannelSnapshot
    thread: ThreadContext | None
    snapshot_tokens: int
    thread_tokens: int
    # Said to the reader when the context may be incomplete (e.g. served stale under a limit).
    notes: tuple[str, ...] = ()
    waited_s: float = 0.0  # rate-limit seconds spent building it (virtual time in replay)


def assemble(
    anchor: Message,
    timeline: Sequence[Message],
    root: Message | None,
    replies: Sequence[Message],
    *,
    viewed: str | None,
    channel_name: str,
    settings: ContextSettings,
    counter: TokenCounter,
    names: Names,
    replies_of: Callable[[str], list[Message]],
    notes: Sequence[str],
    waited: float,
) -> BuiltContext:
    """The context from copies the engine took of its caches: the snapshot around the anchor
    (of ``viewed`` when asked from the assistant pane) and, for a thread, the thread up to the
    question. Display names may call Slack, so this runs without the engine's lock."""
    snapshot = build_channel_snapshot(
        # In the pane the question is placed in the viewed channel, at its own time.
        anchor.model_copy(update={"channel": viewed, "thread_ts": None}) if viewed else anchor,
        timeline,
        channel_name=channel_name,
        window=settings.window,
        budget_tokens=settings.snapshot_budget,
        counter=counter,
        names=names,
        replies_of=replies_of,
    )
    thread = None
    # The anchor is in the snapshot in full; repeating it as a reply only costs tokens.
    replies = [r for r in replies if r.ts != anchor.ts]
    if root is not None and (anchor.thread_ts or replies):
        # Up to the question: what was said after it is not what it asks about.
        replies = [r for r in replies if ts_key(r.ts) <= ts_key(anchor.ts)]
        thread = build_thread_context(
            root,
            replies,
            budget_tokens=settings.thread_budget,
            counter=counter,
            names=names,
            # Slack's count, which knows replies not fetched yet.
            total_replies=max(root.reply_count - (1 if anchor.is_reply else 0), len(replies)),
        )
    return BuiltContext(
        anchor=anchor,
        snapshot=snapshot,
        thread=thread,
        snapshot_tokens=counter.count(wire_json(snapshot)),
        thread_tokens=counter.count(wire_json(thread)) if thread else 0,
        notes=tuple(notes),
        waited_s=waited,
    )
