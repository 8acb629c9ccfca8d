"""What a turn store holds and what the runtime needs of one: the interface every backend meets.

A turn's life, each step durable before the next is taken:

    queued  (before the event is acknowledged; with the event id that brought it)
    reply   (the answer, split into the parts to post: the outbox)
    streaming (a part's stream started: its ts, before any text is appended)
    posted  (one line per part, with the ts Slack gave it)
    done    (every part confirmed; the turn leaves the queue)

After a crash, ``pending()`` lists the turns queued but never answered, and ``outbox()`` the
answers written but not confirmed posted: the bot answers the first and, for the second, looks
in the thread for parts it may have posted before the crash (by the turn id in the message
metadata) before posting the rest; a part whose stream started is finished by replacing that
message, never posted again. Turn and event ids stay known for a while after a turn is done, so
Slack's retries of the same mention, even after a restart, find it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["OutboxEntry", "PendingTurn", "TurnStore"]


@dataclass
class PendingTurn:
    turn_id: str
    payload: dict[str, Any]  # what the bot needs to answer it (channel, thread, anchor, user...)
    queued_at: float
    event_ids: set[str] = field(default_factory=set)
    parts: list[str] | None = None  # the outbox: the answer's parts, once written
    posted: dict[int, str] = field(default_factory=dict)  # part index -> Slack ts
    streaming: dict[int, str] = field(default_factory=dict)  # part -> ts of its started stream


@dataclass(frozen=True)
class OutboxEntry:
    turn_id: str
    payload: dict[str, Any]
    parts: tuple[str, ...]
    posted: dict[int, str]
    streaming: dict[int, str] = field(default_factory=dict)  # started, not confirmed posted


class TurnStore(Protocol):
    """What the runtime needs of a turn store, whatever holds it.

    A backend keeps every step durable before it returns (the caller acks Slack, or posts,
    right after): ``enqueue`` is False when the turn id or the event id is already known (a
    retry), ``pending`` lists turns queued and never answered, ``outbox`` the answers written but
    not confirmed posted.
    """

    def enqueue(self, turn_id: str, payload: dict[str, Any], event_id: str | None) -> bool: ...
    def seen_event(self, event_id: str) -> bool: ...
    def write_reply(self, turn_id: str, parts: list[str]) -> None: ...
    def mark_posted(self, turn_id: str, part: int, ts: str) -> None: ...
    def mark_streaming(self, turn_id: str, part: int, ts: str) -> None: ...
    def finish(self, turn_id: str) -> None: ...
    def pending(self) -> list[PendingTurn]: ...
    def outbox(self) -> list[OutboxEntry]: ...
    def close(self) -> None: ...
