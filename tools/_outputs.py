"""Tool outputs: seed 003's ChannelContextOutput / ChannelMessagesOutput, field for field.

``truncated`` and ``note`` are added by chanctx and only appear when they say something, so an
uncut answer is exactly the seed's shape. :func:`output_json` is the one serialization, used
both to send and to count against the output budget.
"""

from __future__ import annotations

from chanctx.context import Author, MediaRef, ThreadContext
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ChannelContextOutput",
    "ContextResult",
    "Coverage",
    "FetchedMessage",
    "MediaInfo",
    "MediaOutput",
    "MessagesOutput",
    "ThreadOutput",
    "ThreadSummary",
    "output_json",
]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ThreadSummary(_Out):
    reply_count: int = Field(ge=0)
    last_reply_ts: str | None
    participant_names: list[str]


class ContextResult(_Out):
    message_id: str
    thread_id: str | None
    ts: str
    author: Author
    text: str
    thread_summary: ThreadSummary | None
    relevance_signal: str


class Coverage(_Out):
    messages_scanned: int = Field(ge=0)
    # None only when nothing was scanned (an empty channel, or `since` after every message).
    time_range: tuple[str, str] | None


class _Answer(_Out):
    """A whole tool answer. Each one ends with ``truncated`` and ``note``, read last."""


class ChannelContextOutput(_Answer):
    results: list[ContextResult]
    coverage: Coverage
    truncated: bool | None = None
    note: str | None = None


class FetchedMessage(_Out):
    message_id: str
    ts: str
    author: Author
    text: str
    media: list[MediaRef]


class MessagesOutput(_Answer):
    messages: list[FetchedMessage]
    truncated: bool | None = None
    note: str | None = None


class ThreadOutput(_Answer):
    thread: ThreadContext
    truncated: bool | None = None
    note: str | None = None


class MediaInfo(_Out):
    artifact_id: str
    media_type: str
    filename: str | None
    byte_length: int = Field(ge=0)
    source_message_id: str


class MediaOutput(_Answer):
    media: MediaInfo
    truncated: bool | None = None
    note: str | None = None


def output_json(model: _Answer) -> str:
    """Compact JSON; ``truncated``/``note`` left out when unset (nested nulls are kept)."""
    unset = {name for name in ("truncated", "note") if getattr(model, name, None) is None}
    return model.model_dump_json(exclude=unset)
