"""From a platform-neutral Message to the parts every wire model shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from chanctx.context._message import Message
from chanctx.context._slack_text import render_slack_text
from chanctx.context._wire import Author, MediaRef

__all__ = ["Names", "author_of", "display_name_of", "media_of", "text_of"]


@dataclass(frozen=True)
class Names:
    """Display names known to the caller (user id -> name, channel id -> name)."""

    users: Mapping[str, str] = field(default_factory=dict)
    channels: Mapping[str, str] = field(default_factory=dict)


def author_of(message: Message, names: Names) -> Author:
    user_id = message.user_id or message.bot_id or ""
    display = display_name_of(message, names)
    return Author(user_id=user_id, display_name=display, is_bot=message.is_bot or message.is_self)


def display_name_of(message: Message, names: Names) -> str:
    """The author's name as ``author_of`` gives it, without building the model (a block's
    lines need only the name, and validating an ``Author`` per line cost more than the rest)."""
    user_id = message.user_id or message.bot_id or ""
    return names.users.get(user_id) or message.author_name or user_id or "unknown"


def media_of(message: Message) -> list[MediaRef]:
    return [
        MediaRef(
            artifact_id=ref.artifact_id,
            media_type=ref.media_type,
            filename=ref.filename,
            byte_length=ref.byte_length,
        )
        for ref in message.files
    ]


def text_of(message: Message, names: Names) -> str:
    """The text a model reads. A file-only message says what it carries instead of nothing."""
    text = render_slack_text(message.text, users=names.users, channels=names.channels)
    if text.strip() or not message.files:
        return text
    shared = ", ".join(ref.title or ref.filename or ref.artifact_id for ref in message.files)
    return f"[shared {shared}]"
