"""The platform-neutral message every layer below ``bot/`` speaks.

``bot/`` turns a Slack event into a :class:`Message`; ``cache/`` stores it; the builders in
``context/`` turn messages into the wire models Claude reads. Nothing here knows Slack's
payload shapes, so a Discord or Telegram adapter can produce the same objects.
"""

from __future__ import annotations

from chanctx.context._time import validate_ts
from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["FileRef", "Message", "Reaction"]


class FileRef(BaseModel):
    """A file attached to a message. ``artifact_id`` is the platform's file id."""

    model_config = ConfigDict(frozen=True)

    artifact_id: str
    media_type: str = "application/octet-stream"
    filename: str | None = None
    title: str | None = None
    byte_length: int = Field(default=0, ge=0)
    # Where the bytes can be downloaded; only bot/ ever follows it, and only to Slack's hosts.
    download_url: str | None = None


class Reaction(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    count: int = Field(ge=0)
    users: tuple[str, ...] = ()


class Message(BaseModel):
    """One channel message or thread reply.

    ``ts`` is the message id (unique within a channel). ``thread_ts`` is the root's ts for a
    reply, and equals ``ts`` for a root that has replies; it is None for a plain channel message.
    """

    model_config = ConfigDict(frozen=True)

    channel: str
    ts: str
    thread_ts: str | None = None
    user_id: str = ""
    author_name: str | None = None
    is_bot: bool = False
    # True for messages our own bot posted: the assistant side of the conversation.
    is_self: bool = False
    # True for a message that mentions our bot: a question asked of it. With is_self, what
    # search ranks after people's messages (earlier questions and answers crowd out the rest).
    mentions_self: bool = False
    bot_id: str | None = None
    text: str = ""
    subtype: str | None = None
    files: tuple[FileRef, ...] = ()
    reactions: tuple[Reaction, ...] = ()
    reply_count: int = Field(default=0, ge=0)
    reply_users: tuple[str, ...] = ()
    latest_reply: str | None = None
    edited_ts: str | None = None
    deleted: bool = False
    # A thread reply also sent to the channel ("Also send to #channel").
    is_broadcast: bool = False

    @field_validator("ts")
    @classmethod
    def _check_ts(cls, value: str) -> str:
        return validate_ts(value)

    @field_validator("thread_ts", "latest_reply", "edited_ts")
    @classmethod
    def _check_optional_ts(cls, value: str | None) -> str | None:
        return None if value is None else validate_ts(value)

    @property
    def is_reply(self) -> bool:
        """A reply inside a thread (not the root itself)."""
        return self.thread_ts is not None and self.thread_ts != self.ts

    @property
    def in_channel(self) -> bool:
        """Visible in the channel timeline: a top-level message or a broadcast reply."""
        return not self.is_reply or self.is_broadcast

    @property
    def root_ts(self) -> str:
        """The thread this message belongs to, or its own ts if it starts (or could start) one."""
        return self.thread_ts or self.ts
