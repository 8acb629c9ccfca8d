"""An exported message as the store's row, without a pydantic model for the plain ones.

Live intake validates every message with pydantic (``SlackMessage``), which is most of an
import's time at a million messages. Nearly every exported message is plain: a person's (or a
bot's) text, maybe in a thread, maybe edited or reacted to. For those, :func:`plain_row`
checks each field it reads with exact type tests and builds the row the store would keep for
what intake makes of it; anything else (files, system messages, joins, a field of an unusual
type or form) gives None, and the importer hands that message to live intake as before. So the
two paths cannot disagree on what is kept: the unusual goes where it always went, and a
property test holds the plain path to intake's result for generated messages.
"""

from __future__ import annotations

import re
from typing import Any

from chanctx.cache.channel_store import MessageRow, message_row, plain_message_row

__all__ = ["plain_row"]

_TS = re.compile(r"\d{1,12}(\.\d{1,9})?")  # the form validate_ts accepts
# Subtypes a person or a bot writes, without files (file shares go through intake).
_PLAIN_SUBTYPES = frozenset({"", "bot_message", "thread_broadcast", "me_message"})
# The fields beyond ts, user and text that change the row (absent in most messages).
_MORE_KEYS = frozenset(
    {"thread_ts", "reply_count", "reply_users", "latest_reply", "edited", "reactions",
     "username", "bot_id", "bot_profile"}
)  # fmt: skip


class _NotPlain(Exception):
    """A field this module does not vouch for: live intake decides."""


def plain_row(raw: dict[str, Any]) -> MessageRow | None:
    """The store's row for ``raw`` (an exported message object whose ts ``message_problem``
    found usable), or None when it is not plain (the caller then asks live intake)."""
    get = raw.get
    subtype = get("subtype")
    if subtype is not None and (type(subtype) is not str or subtype not in _PLAIN_SUBTYPES):
        return None
    if get("type", "message") != "message" or "files" in raw or "file" in raw:
        return None
    ts: str = raw["ts"]
    text = get("text", "")
    user = get("user")
    if text is None:
        text = ""
    elif type(text) is not str:
        return None
    if user is None:
        user = ""
    elif type(user) is not str:
        return None
    if subtype is None and _MORE_KEYS.isdisjoint(raw):
        return plain_message_row(ts, user, text)  # most messages: nothing else set
    try:
        return _full_row(raw, ts, user, text, subtype or None)
    except _NotPlain:
        return None


def _full_row(
    raw: dict[str, Any], ts: str, user: str, text: str, subtype: str | None
) -> MessageRow:
    get = raw.get
    reply_count = get("reply_count", 0)
    if type(reply_count) is not int or reply_count < 0:
        raise _NotPlain
    bot_id = _string(get("bot_id"))
    return message_row(
        ts,
        thread_ts=_ts(get("thread_ts")),
        user_id=user,
        text=text,
        reply_count=reply_count,
        is_bot=bool(bot_id) or subtype == "bot_message",
        is_broadcast=subtype == "thread_broadcast",
        author_name=_author(_string(get("username")), get("bot_profile")),
        bot_id=bot_id or None,
        subtype=subtype,
        reactions=_reactions(get("reactions", [])),
        reply_users=_strings(get("reply_users", [])),
        latest_reply=_ts(get("latest_reply")),
        edited_ts=_edited(get("edited")),
    )


def _string(value: Any) -> str | None:
    if value is None or type(value) is str:
        return value
    raise _NotPlain


def _ts(value: Any) -> str | None:
    """A ts field as intake reads it: None when unset or empty."""
    if not _string(value):
        return None
    if not _TS.fullmatch(value):
        raise _NotPlain
    return value  # type: ignore[no-any-return]


def _edited(value: Any) -> str | None:
    if value is None:
        return None
    if type(value) is not dict:
        raise _NotPlain
    _string(value.get("user"))
    return _ts(value.get("ts"))


def _strings(values: Any) -> list[str]:
    if type(values) is not list or not all(type(v) is str for v in values):
        raise _NotPlain
    return values


def _reactions(value: Any) -> list[tuple[str, int, list[str]]]:
    if type(value) is not list:
        raise _NotPlain
    out: list[tuple[str, int, list[str]]] = []
    for reaction in value:
        if type(reaction) is not dict:
            raise _NotPlain
        name = reaction.get("name")
        count = reaction.get("count", 0)
        if type(name) is not str or type(count) is not int or count < 0:
            raise _NotPlain
        out.append((name, count, _strings(reaction.get("users", []))))
    return out


def _author(username: str | None, profile: Any) -> str | None:
    """Live intake's author name: the username, else the bot profile's name."""
    if profile is not None and type(profile) is not dict:
        raise _NotPlain
    if username:
        return username
    name = profile.get("name") if profile else None
    return name if type(name) is str else None
