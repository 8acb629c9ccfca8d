"""The parts of Slack's event payloads chanctx reads, as lenient pydantic models.

Slack adds fields over time, so unknown ones are ignored; what chanctx relies on is checked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SlackEdited", "SlackFile", "SlackMessage", "SlackReaction", "SlackReactionItem"]


class _Slack(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class SlackFile(_Slack):
    id: str
    name: str | None = None
    title: str | None = None
    mimetype: str | None = None
    size: int = 0
    url_private: str | None = None
    url_private_download: str | None = None
    mode: str | None = None  # "tombstone" for a deleted file, "hidden_by_limit" on free plans


class SlackReaction(_Slack):
    name: str
    count: int = 0
    users: list[str] = Field(default_factory=list)


class SlackEdited(_Slack):
    user: str | None = None
    ts: str | None = None


class SlackMessage(_Slack):
    """A message object: the event itself, or the ``message`` inside ``message_changed``."""

    ts: str
    text: str | None = ""
    user: str | None = None
    username: str | None = None
    bot_id: str | None = None
    bot_profile: dict[str, Any] | None = None
    subtype: str | None = None
    thread_ts: str | None = None
    files: list[SlackFile] = Field(default_factory=list)
    reactions: list[SlackReaction] = Field(default_factory=list)
    reply_count: int = 0
    reply_users: list[str] = Field(default_factory=list)
    latest_reply: str | None = None
    edited: SlackEdited | None = None


class SlackReactionItem(_Slack):
    type: str
    channel: str
    ts: str
