"""The parts of Slack's event payloads chanctx reads, as lenient pydantic models.

Slack adds fields over time, so unknown ones are ignored; what chanctx relies on is checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SlackEdited",
    "SlackFile",
    "SlackMessage",
    "SlackReaction",
    "SlackReactionItem",
    "channel_label",
    "user_label",
]


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


def user_label(data: Mapping[str, Any]) -> str | None:
    """The name a person goes by, from a ``users.info`` answer."""
    user = data.get("user") or {}
    profile = user.get("profile") or {}
    for value in (
        profile.get("display_name"),
        profile.get("real_name"),
        user.get("real_name"),
        user.get("name"),
    ):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def channel_label(data: Mapping[str, Any]) -> str | None:
    """A channel's name, from a ``conversations.info`` answer."""
    name = (data.get("channel") or {}).get("name")
    return name if isinstance(name, str) and name else None
