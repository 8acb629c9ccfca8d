"""Slack event -> what it means for chanctx's caches, decided once, in one place.

Each event becomes one intake action: record a message, apply an edit, delete, count a
reaction, or ignore (with the reason, logged at debug). Edits and deletions never trigger an
answer; only ``bot/`` decides what does, from the action and the event type.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from chanctx.bot.slack._slack_models import SlackMessage, SlackReactionItem
from chanctx.context import FileRef, Message, Reaction
from chanctx.context.errors import InvalidTimestamp
from chanctx.context.timestamps import validate_ts
from pydantic import ValidationError

__all__ = [
    "Delete",
    "Edit",
    "FileFields",
    "Ignore",
    "IntakeAction",
    "Pin",
    "React",
    "Record",
    "SelfIdentity",
    "file_refs",
    "intake",
    "message_fault",
]

logger = logging.getLogger("chanctx.intake")
_HIDDEN_FILES = frozenset({"tombstone", "hidden_by_limit"})  # deleted, or hidden by a free plan

# Subtypes that carry a message a person (or a bot) wrote: recorded as messages.
_CONTENT_SUBTYPES = {None, "", "bot_message", "file_share", "thread_broadcast", "me_message"}
# System messages worth knowing in context ("set the channel topic: ..."): recorded, marked
# by subtype.
_SYSTEM_SUBTYPES = {
    "channel_topic", "channel_purpose", "channel_name", "channel_archive", "channel_unarchive",
    "group_topic", "group_purpose", "group_name", "pinned_item", "unpinned_item",
}  # fmt: skip
# Membership noise: it would only take snapshot slots from conversation. Ignored on purpose.
_MEMBERSHIP_SUBTYPES = {
    "channel_join", "channel_leave", "group_join", "group_leave", "bot_add", "bot_remove",
}  # fmt: skip


@dataclass(frozen=True)
class SelfIdentity:
    """Who "we" are in this workspace, so our own messages are the assistant's."""

    user_id: str = ""
    bot_id: str = ""


@dataclass(frozen=True)
class Record:
    message: Message
    # app_mention carries the message too, and may arrive before its message event:
    # record it then, but never overwrite what the message event (or an edit) already gave.
    only_if_new: bool = False


@dataclass(frozen=True)
class Edit:
    channel: str
    ts: str
    text: str
    edited_ts: str | None
    files: tuple[FileRef, ...] | None


@dataclass(frozen=True)
class Delete:
    channel: str
    ts: str


@dataclass(frozen=True)
class React:
    channel: str
    ts: str
    name: str
    user: str
    added: bool


@dataclass(frozen=True)
class Pin:
    """A message pinned to (or unpinned from) its channel: the query API serves pins first."""

    message: Message
    added: bool


@dataclass(frozen=True)
class Ignore:
    reason: str


IntakeAction = Record | Edit | Delete | React | Pin | Ignore


class FileFields(Protocol):
    """The fields of a Slack file a ``FileRef`` is made of (intake's model has them, and so
    does the export reader's faster struct)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def title(self) -> str | None: ...
    @property
    def mimetype(self) -> str | None: ...
    @property
    def size(self) -> int: ...
    @property
    def url_private(self) -> str | None: ...
    @property
    def url_private_download(self) -> str | None: ...
    @property
    def mode(self) -> str | None: ...


def file_refs(files: Iterable[FileFields]) -> tuple[FileRef, ...]:
    """The message's files as ``FileRef``s, deleted ones and those a free plan hides left out."""
    return tuple(
        FileRef(
            artifact_id=f.id,
            media_type=f.mimetype or "application/octet-stream",
            filename=f.name,
            title=f.title,
            byte_length=max(f.size, 0),
            download_url=f.url_private_download or f.url_private,
        )
        for f in files
        if f.mode not in _HIDDEN_FILES
    )


def to_message(raw: SlackMessage, channel: str, me: SelfIdentity) -> Message:
    """A Slack message object as a platform-neutral Message."""
    is_self = bool(
        (me.user_id and raw.user == me.user_id) or (me.bot_id and raw.bot_id == me.bot_id)
    )
    bot_name = (raw.bot_profile or {}).get("name") if raw.bot_profile else None
    # SlackMessage checked the types; the forms it does not know are checked here (a bad one
    # raises, and intake ignores the event), then the Message is built without a second pass.
    validate_ts(raw.ts)
    for ts in (raw.thread_ts, raw.latest_reply, raw.edited.ts if raw.edited else None):
        if ts:  # an empty optional ts means none
            validate_ts(ts)
    if raw.reply_count < 0:
        raise ValueError(f"reply_count {raw.reply_count} is negative")
    return Message.model_construct(
        channel=channel,
        ts=raw.ts,
        thread_ts=raw.thread_ts or None,
        user_id=raw.user or "",
        author_name=raw.username or (bot_name if isinstance(bot_name, str) else None),
        is_bot=bool(raw.bot_id) or raw.subtype == "bot_message",
        is_self=is_self,
        mentions_self=bool(me.user_id) and f"<@{me.user_id}>" in (raw.text or ""),
        bot_id=raw.bot_id or None,
        text=raw.text or "",
        subtype=raw.subtype or None,
        files=file_refs(raw.files),
        reactions=tuple(
            Reaction(name=r.name, count=r.count, users=tuple(r.users)) for r in raw.reactions
        ),
        reply_count=raw.reply_count,
        reply_users=tuple(raw.reply_users),
        latest_reply=raw.latest_reply or None,
        edited_ts=(raw.edited.ts or None) if raw.edited else None,
        is_broadcast=raw.subtype == "thread_broadcast",
    )


def _message_event(event: Mapping[str, Any], me: SelfIdentity) -> IntakeAction:
    channel = event.get("channel")
    if not isinstance(channel, str) or not channel:
        return Ignore("message event without a channel")
    subtype = event.get("subtype")
    if subtype is not None and not isinstance(subtype, str):
        return Ignore(f"message subtype is a {type(subtype).__name__}, not a string")
    if subtype == "message_changed":
        inner = SlackMessage.model_validate(event.get("message") or {})
        edited_ts = inner.edited.ts if inner.edited and inner.edited.ts else None
        return Edit(
            channel, validate_ts(inner.ts), inner.text or "", edited_ts, file_refs(inner.files)
        )
    if subtype == "message_deleted":
        return Delete(channel, validate_ts(str(event.get("deleted_ts", ""))))
    if subtype in _MEMBERSHIP_SUBTYPES:
        return Ignore(f"membership change ({subtype}) is not conversation")
    if subtype in _CONTENT_SUBTYPES or subtype in _SYSTEM_SUBTYPES:
        if subtype in _SYSTEM_SUBTYPES:
            logger.debug("recorded system message %s in %s", subtype, channel)
        return Record(to_message(SlackMessage.model_validate(event), channel, me))
    return Ignore(f"message subtype {subtype!r} carries no conversation")


def _reaction_event(event: Mapping[str, Any], *, added: bool) -> IntakeAction:
    item = SlackReactionItem.model_validate(event.get("item") or {})
    if item.type != "message":
        return Ignore(f"reaction on a {item.type}, not a message")
    return React(
        item.channel,
        validate_ts(item.ts),
        str(event.get("reaction", "")),
        str(event.get("user", "")),
        added,
    )


def _pin_event(event: Mapping[str, Any], me: SelfIdentity, *, added: bool) -> IntakeAction:
    item = event.get("item")
    if not isinstance(item, Mapping) or item.get("type") != "message":
        return Ignore("a pin of something other than a message")
    channel = item.get("channel") or event.get("channel_id")
    raw = item.get("message")
    if not isinstance(channel, str) or not channel or not isinstance(raw, Mapping):
        return Ignore("a pin without its channel or message")
    return Pin(to_message(SlackMessage.model_validate(raw), channel, me), added)


def intake(event: Mapping[str, Any], me: SelfIdentity) -> IntakeAction:
    """Decide what one Slack event means for the caches. Never raises on bad input."""
    kind = event.get("type")
    try:
        if kind == "message":
            action = _message_event(event, me)
        elif kind in ("reaction_added", "reaction_removed"):
            action = _reaction_event(event, added=kind == "reaction_added")
        elif kind in ("pin_added", "pin_removed"):
            action = _pin_event(event, me, added=kind == "pin_added")
        elif (
            kind == "app_mention" and isinstance(event.get("channel"), str) and event.get("channel")
        ):
            message = to_message(SlackMessage.model_validate(event), str(event["channel"]), me)
            action = Record(message, only_if_new=True)
        else:
            action = Ignore(f"event type {kind!r} changes no history")
    except (ValidationError, InvalidTimestamp, TypeError, ValueError, AttributeError) as error:
        # A field of an unexpected shape: the event changes nothing, the bot goes on.
        reason = f"malformed {kind} event: {_first_line(error)}"
        logger.warning("ignored %s", reason)
        return Ignore(reason)
    if isinstance(action, Ignore):
        logger.debug("ignored: %s", action.reason)
    return action


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def message_fault(event: Mapping[str, Any], channel: str) -> str | None:
    """Why intake could not record this message (its first line), or None when it can."""
    try:
        to_message(SlackMessage.model_validate(event), channel, SelfIdentity())
    except (ValidationError, InvalidTimestamp, TypeError, ValueError, AttributeError) as error:
        return _first_line(error)
    return None
