"""The wire models: the JSON Claude reads, field for field (ChannelSnapshot, ThreadContext and
the parts they share); their field names are a contract with the system prompt and the tools.

Every ``ts`` here is ISO 8601 UTC; every ``message_id`` / ``thread_id`` is the platform's
message id (the Slack ts). ``wire_json`` is the one serialization that is both sent and
counted against budgets, so what is budgeted is exactly what is sent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AdjacentMessage",
    "Anchor",
    "Author",
    "ChannelRef",
    "ChannelSnapshot",
    "MediaRef",
    "ThreadActivity",
    "ThreadContext",
    "ThreadReply",
    "ThreadRoot",
    "Truncation",
    "wire_json",
]


class _Wire(BaseModel):
    # Wire models reject unknown fields so a typo in a fixture or a report fails loudly.
    model_config = ConfigDict(frozen=True, extra="forbid")


class Author(_Wire):
    user_id: str
    display_name: str
    is_bot: bool


class MediaRef(_Wire):
    artifact_id: str
    media_type: str
    filename: str | None
    byte_length: int = Field(ge=0)


class ChannelRef(_Wire):
    id: str
    name: str
    platform: str = "slack"


class Anchor(_Wire):
    message_id: str
    ts: str
    author: Author
    text: str
    media: list[MediaRef]
    thread_id: str | None


class ThreadActivity(_Wire):
    reply_count: int = Field(ge=0)
    replies_last_1h: int = Field(ge=0)
    last_reply_ts: str | None


class AdjacentMessage(_Wire):
    message_id: str
    ts: str
    author: Author
    snippet: str
    thread_activity: ThreadActivity | None
    has_media: bool
    reactions: list[str]


class ChannelSnapshot(_Wire):
    schema_version: Literal["1.0"] = "1.0"
    channel: ChannelRef
    anchor: Anchor
    adjacent: list[AdjacentMessage]


class ThreadRoot(_Wire):
    message_id: str
    ts: str
    author: Author
    text: str
    media: list[MediaRef]


class ThreadReply(_Wire):
    message_id: str
    ts: str
    author: Author
    text: str
    is_truncated: bool
    media: list[MediaRef]


class Truncation(_Wire):
    total_replies: int = Field(ge=0)
    included_replies: int = Field(ge=0)
    strategy: Literal["most_recent"] = "most_recent"
    omitted_range_ts: tuple[str, str] | None


class ThreadContext(_Wire):
    schema_version: Literal["1.0"] = "1.0"
    thread_id: str
    root: ThreadRoot
    replies: list[ThreadReply]
    truncation: Truncation


def wire_json(model: BaseModel) -> str:
    """The compact JSON that is sent to Claude and counted against budgets."""
    return model.model_dump_json()
