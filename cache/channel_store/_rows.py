"""A :class:`~chanctx.context.Message` as one row of ``messages``, and its full-text document.

The row keeps what nearly every message sets in columns of its own (ts, thread, user, text,
reply count, flags) and the rarely set fields (files, reactions, bot and author names, edits)
as one compact JSON object, NULL for most chat messages: a million messages should not carry a
million copies of ``"files": []``.

The full-text document of a message is its text, its author name and its files' titles and
names, joined by newlines. It is computed from the row alone, so the store can always recompute
the exact document it indexed (the contentless FTS5 table needs it to delete the entry).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from chanctx.cache import ts_key
from chanctx.context import FileRef, Message, Reaction

__all__ = [
    "MessageRow",
    "document",
    "match_query",
    "message_from_row",
    "more_json",
    "row_from_message",
    "version_of",
]

_FLAG_NAMES = ("is_bot", "is_self", "mentions_self", "deleted", "is_broadcast")
# One encoder for every ``more``: json.dumps with options builds a new one a call.
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_WORD = re.compile(r"\w+")

# (ts_key, ts, thread_key, thread_ts, user_id, text, reply_count, flags, more, version, deleted)
MessageRow = tuple[int, str, int | None, str | None, str, str, int, int, str | None, int, int]


def version_of(edited_ts: str | None) -> int:
    """The version of a copy: its edit's ts key, 0 when it was never edited."""
    return 0 if edited_ts is None else ts_key(edited_ts)


def _flags(message: Message) -> int:
    return sum(1 << bit for bit, name in enumerate(_FLAG_NAMES) if getattr(message, name))


def _more(message: Message) -> str | None:
    return more_json(
        author_name=message.author_name,
        bot_id=message.bot_id,
        subtype=message.subtype,
        files=[ref.model_dump(exclude_defaults=True) for ref in message.files],
        reactions=[(r.name, r.count, r.users) for r in message.reactions],
        reply_users=message.reply_users,
        latest_reply=message.latest_reply,
        edited_ts=message.edited_ts,
    )


def more_json(
    *,
    author_name: str | None = None,
    bot_id: str | None = None,
    subtype: str | None = None,
    files: Sequence[dict[str, Any]] = (),
    reactions: Sequence[tuple[str, int, Sequence[str]]] = (),
    reply_users: Sequence[str] = (),
    latest_reply: str | None = None,
    edited_ts: str | None = None,
) -> str | None:
    """The ``more`` column: the rarely set fields as compact JSON, None when all are unset."""
    more: dict[str, Any] = {}
    if author_name is not None:
        more["a"] = author_name
    if bot_id is not None:
        more["b"] = bot_id
    if subtype is not None:
        more["s"] = subtype
    if files:
        more["f"] = list(files)
    if reactions:
        more["r"] = [[name, count, list(users)] for name, count, users in reactions]
    if reply_users:
        more["u"] = list(reply_users)
    if latest_reply is not None:
        more["l"] = latest_reply
    if edited_ts is not None:
        more["e"] = edited_ts
    return _ENCODE(more) if more else None


def row_from_message(message: Message) -> MessageRow:
    thread_key = None if message.thread_ts is None else ts_key(message.thread_ts)
    return (
        ts_key(message.ts),
        message.ts,
        thread_key,
        message.thread_ts,
        message.user_id,
        message.text,
        message.reply_count,
        _flags(message),
        _more(message),
        version_of(message.edited_ts),
        1 if message.deleted else 0,
    )


def message_from_row(
    channel: str,
    ts: str,
    thread_ts: str | None,
    user_id: str,
    text: str,
    reply_count: int,
    flags: int,
    more_json: str | None,
) -> Message:
    """The stored message (values were validated when it was written: not validated again)."""
    values: dict[str, Any] = {
        "channel": channel,
        "ts": ts,
        "thread_ts": thread_ts,
        "user_id": user_id,
        "text": text,
        "reply_count": reply_count,
    }
    for bit, name in enumerate(_FLAG_NAMES):
        if flags & (1 << bit):
            values[name] = True
    if more_json:
        more = json.loads(more_json)
        values["author_name"] = more.get("a")
        values["bot_id"] = more.get("b")
        values["subtype"] = more.get("s")
        values["files"] = tuple(FileRef.model_validate(f) for f in more.get("f", ()))
        values["reactions"] = tuple(
            Reaction(name=n, count=c, users=tuple(u)) for n, c, u in more.get("r", ())
        )
        values["reply_users"] = tuple(more.get("u", ()))
        values["latest_reply"] = more.get("l")
        values["edited_ts"] = more.get("e")
    return Message.model_construct(**values)


def document(text: str, more_json: str | None) -> str:
    """What the full-text index holds for a row: text, author name, file titles and names."""
    parts = [text]
    if more_json:
        more = json.loads(more_json)
        if more.get("a"):
            parts.append(more["a"])
        for ref in more.get("f", ()):
            parts.extend(p for p in (ref.get("title"), ref.get("filename")) if p)
    return "\n".join(parts)


def match_query(terms: Sequence[str]) -> str | None:
    """An FTS5 query matching any of ``terms``; None when no term has a word character.

    Each term becomes a quoted phrase of its word parts, so "checkout-api" finds the two
    tokens side by side and "v2.30.4" its three, and no term can inject FTS5 syntax.
    """
    phrases: list[str] = []
    for term in terms:
        words = _WORD.findall(term)
        if words:
            phrase = '"' + " ".join(words) + '"'
            if phrase not in phrases:
                phrases.append(phrase)
    return " OR ".join(phrases) if phrases else None
