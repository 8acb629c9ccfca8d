"""The store events the row-cache and search-cache property tests draw: one kind number (0-6)
becomes a post, an edit, a deletion, a forgotten person, a post with a file, a deleted file or
a forgotten channel, at a second after ``BASE`` in team ``T``."""

from __future__ import annotations

from chanctx.cache.channel_store import (
    ChannelForgotten,
    FileDeleted,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    StoreEvent,
    UserForgotten,
)
from chanctx.context import FileRef, Message

__all__ = ["BASE", "T", "event", "ts"]

T = "T1"
BASE = 1_700_000_000


def ts(second: int) -> str:
    return f"{BASE + second}.000000"


def event(kind: int, second: int, channel: str, words: list[str]) -> StoreEvent:
    """Event ``kind`` (0-6, as the module docstring lists them) of ``channel``."""
    text = " ".join(words)
    if kind == 0:
        user = "U2" if second % 3 == 0 else "U1"
        return MessagePosted(T, Message(channel=channel, ts=ts(second), user_id=user, text=text))
    if kind == 1:
        return MessageEdited(T, channel, ts(second), text, ts(second + 1_000))
    if kind == 2:
        return MessageDeleted(T, channel, ts(second))
    if kind == 3:
        return UserForgotten(T, "U2")
    if kind == 4:
        ref = FileRef(artifact_id="F1", title="zanzibar deploy notes")
        message = Message(channel=channel, ts=ts(second), user_id="U1", text=text, files=(ref,))
        return MessagePosted(T, message)
    if kind == 5:
        return FileDeleted(T, "F1")
    return ChannelForgotten(T, channel)
