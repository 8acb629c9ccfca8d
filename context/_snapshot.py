"""ChannelSnapshot: the anchor in full plus a compact window of the nearest channel messages."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Sequence

from chanctx.context._message import Message
from chanctx.context._truncate import snippet
from chanctx.context._wire import (
    AdjacentMessage,
    Anchor,
    ChannelRef,
    ChannelSnapshot,
    ThreadActivity,
    wire_json,
)
from chanctx.context.budget import Chunk, pack
from chanctx.context.render import Names, author_of, media_of, text_of
from chanctx.context.timestamps import iso_from_ts, seconds_from_ts
from chanctx.context.tokens import TokenCounter, default_counter

__all__ = [
    "DEFAULT_ADJACENT_WINDOW",
    "DEFAULT_SNAPSHOT_BUDGET",
    "build_channel_snapshot",
    "reaction_labels",
]

DEFAULT_ADJACENT_WINDOW = 20
DEFAULT_SNAPSHOT_BUDGET = 1_500
SNIPPET_CHARS = 150
_HOUR = 3600.0

RepliesOf = Callable[[str], Sequence[Message]]


def reaction_labels(message: Message) -> list[str]:
    """``[":white_check_mark: 3", ":eyes: 2"]``: most reacted first, then by name."""
    counted = [r for r in message.reactions if r.count > 0]
    counted.sort(key=lambda r: (-r.count, r.name))
    return [f":{r.name}: {r.count}" for r in counted]


def _activity(
    message: Message, anchor_seconds: float, replies_of: RepliesOf
) -> ThreadActivity | None:
    known = () if message.is_reply else replies_of(message.ts)
    reply_count = max(message.reply_count, len(known))
    if reply_count == 0:
        return None
    last = max((r.ts for r in known), key=float, default=message.latest_reply)
    if message.latest_reply and last and float(message.latest_reply) > float(last):
        last = message.latest_reply
    window_start = anchor_seconds - _HOUR
    recent = sum(1 for r in known if window_start < float(r.ts) <= anchor_seconds)
    if not recent and last and window_start < float(last) <= anchor_seconds:
        recent = 1  # the platform told us of a recent reply we have not seen ourselves
    return ThreadActivity(
        reply_count=reply_count,
        replies_last_1h=recent,
        last_reply_ts=iso_from_ts(last) if last else None,
    )


def _nearest(timeline: Sequence[Message], anchor: Message, skip: set[str]) -> Iterator[Message]:
    """Channel messages by distance in time from the anchor, nearest first (older wins ties)."""
    # Bisect with a key: only O(log n) timestamps are parsed, so a long history costs nothing.
    at = seconds_from_ts(anchor.ts)
    after = bisect.bisect_right(timeline, at, key=lambda m: float(m.ts))
    before = after - 1
    while before >= 0 or after < len(timeline):
        take_before = after >= len(timeline) or (
            before >= 0 and at - float(timeline[before].ts) <= float(timeline[after].ts) - at
        )
        if take_before:
            candidate, before = timeline[before], before - 1
        else:
            candidate, after = timeline[after], after + 1
        if candidate.ts not in skip and not candidate.deleted:
            yield candidate


def build_channel_snapshot(
    anchor: Message,
    timeline: Sequence[Message],
    *,
    channel_name: str,
    platform: str = "slack",
    window: int = DEFAULT_ADJACENT_WINDOW,
    budget_tokens: int = DEFAULT_SNAPSHOT_BUDGET,
    counter: TokenCounter | None = None,
    names: Names | None = None,
    replies_of: RepliesOf | None = None,
) -> ChannelSnapshot:
    """Build a ChannelSnapshot whose serialized JSON fits ``budget_tokens``.

    ``timeline`` is the channel's visible messages oldest to newest (it may or may not hold
    the anchor). The anchor is never cut; the ``window`` nearest messages are offered to the
    budget nearest first, so the farthest are the ones dropped; the result lists them
    oldest to newest. The anchor's own thread root is left out: ThreadContext carries it.
    """
    if window < 0:
        raise ValueError(f"Adjacent window must be >= 0, got {window}.")
    counter = counter or default_counter()
    names = names or Names()
    lookup = replies_of or (lambda _ts: ())
    anchor_seconds = seconds_from_ts(anchor.ts)
    frame = ChannelSnapshot(
        channel=ChannelRef(id=anchor.channel, name=channel_name, platform=platform),
        anchor=Anchor(
            message_id=anchor.ts,
            ts=iso_from_ts(anchor.ts),
            author=author_of(anchor, names),
            text=text_of(anchor, names),
            media=media_of(anchor),
            thread_id=anchor.thread_ts,
        ),
        adjacent=[],
    )
    skip = {anchor.ts, anchor.root_ts}
    candidates: list[Chunk[AdjacentMessage]] = []
    for message in _nearest(timeline, anchor, skip):
        if len(candidates) == window:
            break
        adjacent = AdjacentMessage(
            message_id=message.ts,
            ts=iso_from_ts(message.ts),
            author=author_of(message, names),
            snippet=snippet(text_of(message, names), SNIPPET_CHARS),
            thread_activity=_activity(message, anchor_seconds, lookup),
            has_media=bool(message.files),
            reactions=reaction_labels(message),
        )
        candidates.append(Chunk(key=message.ts, text=adjacent.snippet, item=adjacent))

    comma = counter.count(",")
    packing = pack(
        candidates,
        budget=max(budget_tokens - counter.count(wire_json(frame)), 0),
        cost=lambda chunk, _text: counter.count(wire_json(chunk.item)) + comma,
        truncate=False,
    )
    chosen = sorted((p.chunk.item for p in packing.included), key=lambda a: float(a.message_id))
    snapshot = frame.model_copy(update={"adjacent": list(chosen)})
    while chosen and counter.count(wire_json(snapshot)) > budget_tokens:
        # Drop the farthest from the anchor, as the budget would have.
        chosen.remove(max(chosen, key=lambda a: abs(float(a.message_id) - anchor_seconds)))
        snapshot = frame.model_copy(update={"adjacent": list(chosen)})
    return snapshot
