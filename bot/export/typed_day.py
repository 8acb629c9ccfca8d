"""A day file decoded straight into the store's rows, by typed decoding in C (msgspec).

``json.loads`` builds a dict for every message and a string for every key it holds (an export's
message carries a dozen fields the store never reads: ``client_msg_id``, ``user_profile``,
``team``...), and Python then reads the few that matter out of it. Here msgspec decodes the
day's bytes into :class:`_Message` structs holding only the fields a plain message's row needs,
checking their JSON types as it goes and skipping the rest without building them; what is left
for Python is one tuple a message.

This path vouches only for what it can check this way. A day it cannot take whole (a field of
an unexpected type, an item that is no object, a ts that is no Slack ts, bytes that are not
UTF-8 JSON, a surrogate escape) gives None, and the caller reads that day the way it always
did (``json.loads``, ``plain_row`` and live intake, which names each problem). Inside a day it
takes, a file share whose ``files`` decode as ``SlackFile``'s declared types is read here as
intake's ``to_message`` reads it (its files given back for their records: pydantic's model of
the whole message was about 100 µs of each), and a message that is not plain otherwise (a
system subtype, the singular ``file`` of old exports, a join) is handed to intake from its own
bytes. So this path and ``plain_row`` give the same rows and files (property and example
tests hold them to it) and the slower path keeps every refusal and its wording.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import msgspec
from chanctx.bot.export.reader import is_slack_ts
from chanctx.bot.slack.intake import file_refs
from chanctx.cache.channel_store import (
    MessageRow,
    index_words,
    message_row,
    plain_message_row,
    plain_reply_row,
    row_words,
)
from chanctx.context import FileRef

__all__ = ["IntakeRow", "typed_day"]

_TS = re.compile(r"\d{1,12}(\.\d{1,9})?").fullmatch  # the form intake's validate_ts accepts
# Subtypes a person or a bot writes, without files (others go through intake).
_PLAIN_SUBTYPES = frozenset({"", "bot_message", "thread_broadcast", "me_message"})
_ABSENT = msgspec.Raw()  # a field the message does not hold at all


class _Edited(msgspec.Struct, gc=False):
    ts: str | None = None
    user: str | None = None


class _Reaction(msgspec.Struct, gc=False):
    name: str
    count: int = 0
    users: list[str] = []


class _File(msgspec.Struct, gc=False):
    """A shared file's fields that intake's ``SlackFile`` reads (the others are skipped)."""

    id: str
    name: str | None = None
    title: str | None = None
    mimetype: str | None = None
    size: int = 0
    url_private: str | None = None
    url_private_download: str | None = None
    mode: str | None = None


class _BotProfile(msgspec.Struct, gc=False):
    name: object = None  # intake takes a name only when it is a string


class _Message(msgspec.Struct, gc=False):
    """The fields of an exported message that make its row; any others are skipped. Those
    after ``thread_ts`` are unset in most messages (``_PLAIN`` holds their defaults), so a
    person's message or reply is told by one comparison."""

    ts: str
    text: str | None = None
    user: str | None = None
    thread_ts: str | None = None
    type: str = "message"
    subtype: str | None = None
    reply_count: int = 0
    reply_users: list[str] = []
    latest_reply: str | None = None
    edited: _Edited | None = None
    reactions: list[_Reaction] = []
    username: str | None = None
    bot_id: str | None = None
    bot_profile: _BotProfile | None = None
    files: msgspec.Raw = _ABSENT  # present (even as null): intake's to read
    file: msgspec.Raw = _ABSENT


# The fields after ``thread_ts`` of a message that is a person's text (or reply) and nothing else.
_PLAIN: tuple[object, ...] = (
    "message",
    None,
    0,
    [],
    None,
    None,
    [],
    None,
    None,
    None,
    _ABSENT,
    _ABSENT,
)
_astuple = msgspec.structs.astuple
_DAY = msgspec.json.Decoder(list[_Message])
_FILES = msgspec.json.Decoder(list[_File])
# Intake's subtypes of a person's or a bot's message, a file share among them.
_SHARE_SUBTYPES = _PLAIN_SUBTYPES | {"file_share"}
_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])


class _NotPlain(Exception):
    """A value this path does not vouch for: the whole day goes the slower way."""


# A message that is not plain, from its own bytes (and its index in the day): its row and
# words, or None when intake records nothing of it.
IntakeRow = Callable[[dict[str, Any], int], tuple[MessageRow, str] | None]


def typed_day(
    data: bytes, intake_row: IntakeRow, files: list[tuple[FileRef, str]] | None = None
) -> tuple[list[MessageRow], list[str], int] | None:
    """The rows of the day file ``data``, in its order, the words of each row's document
    (``rows[i]``'s in ``words[i]``, see ``index_words``) and the count of its messages; a
    message that is not plain is read by ``intake_row``. With ``files``, a file share is read
    here too (its files appended to ``files`` with its ts, as intake's ``Message.files``).
    None when the day must be read the slower way (see the module docstring): what
    ``intake_row`` recorded, and ``files``, are then void."""
    try:
        messages = _DAY.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    rows: list[MessageRow] = []
    words: list[str] = []
    items: list[msgspec.Raw] | None = None
    try:
        for index, message in enumerate(messages):
            values = _astuple(message)
            if not is_slack_ts(values[0]):
                return None  # the slower path names it
            if values[4:] == _PLAIN:  # most messages: one C comparison, one tuple
                text = values[1] or ""
                thread = _ts(values[3])
                if thread is not None:  # a person's reply
                    rows.append(plain_reply_row(values[0], thread, values[2] or "", text))
                else:
                    rows.append(plain_message_row(values[0], values[2] or "", text))
                words.append(index_words(text))
                continue
            row = _row(message)
            if row is not None:
                rows.append(row)
                words.append(_words(message))
                continue
            shared = None if files is None else _shared(message)
            if shared is not None and files is not None:
                rows.append(shared[0])
                words.append(row_words(shared[0]))
                files.extend((ref, message.ts) for ref in shared[1])
                continue
            if items is None:
                items = _ITEMS.decode(data)
            found = intake_row(json.loads(bytes(items[index])), index)
            if found is not None:
                rows.append(found[0])
                words.append(found[1])
    except _NotPlain:
        return None
    return rows, words, len(messages)


def _row(m: _Message) -> MessageRow | None:
    """The message's row, or None when intake must read it (not plain)."""
    subtype = m.subtype
    if subtype is not None and subtype not in _PLAIN_SUBTYPES:
        return None
    if m.type != "message" or m.files is not _ABSENT or m.file is not _ABSENT:
        return None
    return _full_row(m, ())


def _shared(m: _Message) -> tuple[MessageRow, tuple[FileRef, ...]] | None:
    """A file share's row and its files as intake's ``to_message`` makes them (tombstoned
    and hidden files left out), or None when intake must read it: another subtype, the
    singular ``file`` of old exports, or a ``files`` that is not a list of file objects with
    the types ``SlackFile`` declares (its id a string)."""
    if m.type != "message" or m.files is _ABSENT or m.file is not _ABSENT:
        return None
    if m.subtype is not None and m.subtype not in _SHARE_SUBTYPES:
        return None
    try:
        found = _FILES.decode(m.files)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    refs = file_refs(found)
    return _full_row(m, refs), refs


def _full_row(m: _Message, files: tuple[FileRef, ...]) -> MessageRow:
    """The row of a message of an accepted subtype (``files`` its shared files)."""
    subtype = m.subtype
    text = m.text or ""
    user = m.user or ""
    if m.reply_count < 0 or any(r.count < 0 for r in m.reactions):
        raise _NotPlain
    bot_id = m.bot_id
    edited = m.edited
    return message_row(
        m.ts,
        thread_ts=_ts(m.thread_ts),
        user_id=user,
        text=text,
        reply_count=m.reply_count,
        is_bot=bool(bot_id) or subtype == "bot_message",
        is_broadcast=subtype == "thread_broadcast",
        author_name=_author(m),
        bot_id=bot_id or None,
        subtype=subtype or None,
        files=files,
        reactions=[(r.name, r.count, r.users) for r in m.reactions],
        reply_users=m.reply_users,
        latest_reply=_ts(m.latest_reply),
        edited_ts=None if edited is None else _ts(edited.ts),
    )


def _ts(value: str | None) -> str | None:
    """A ts field as intake reads it: None when unset or empty."""
    if not value:
        return None
    if not _TS(value):
        raise _NotPlain
    return value


def _author(m: _Message) -> str | None:
    """Live intake's author name: the username, else the bot profile's name."""
    if m.username:
        return m.username
    name = m.bot_profile.name if m.bot_profile is not None else None
    return name if type(name) is str else None


def _words(m: _Message) -> str:
    """The words of the row's full-text document: its text and author name."""
    author = _author(m)
    return index_words(m.text or "" if author is None else f"{m.text or ''}\n{author}")
