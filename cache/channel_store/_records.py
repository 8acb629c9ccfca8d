"""What goes into the channel store and what comes out of it.

Events are small frozen dataclasses (an import writes millions of them: no validation beyond
what built the :class:`~chanctx.context.Message`); what leaves the store for an operator or
another process (stats, cursors) is a pydantic model, so it serialises to JSON as it is.

Every key names the workspace: ``team`` is part of every event and every read, so one store
holds every workspace of an ``--oauth`` install without mixing them.

The idempotency rule (live events, an export import and a backfill all write the same rows):

* ``(team, channel, ts)`` is a message's key; writing a message that is already stored replaces
  it only if its version is not older. The version is the ``edited_ts`` of the copy (an unedited
  copy is version 0), so an older copy never undoes an edit seen live.
* A deletion leaves a tombstone (the key, no text). A tombstone wins over every later write of
  that key: an export taken before the deletion cannot bring the message back.
* Forgetting a channel records the newest ts it erased; nothing at or before it is accepted again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chanctx.context import FileRef, Message
from pydantic import BaseModel, ConfigDict

__all__ = [
    "BackfillCursor",
    "Candidate",
    "ChannelForgotten",
    "ChannelKey",
    "ChannelNamed",
    "ChannelStats",
    "CursorSaved",
    "FileDeleted",
    "FileShared",
    "MessageDeleted",
    "MessageEdited",
    "MessagePosted",
    "PinChanged",
    "ReactionChanged",
    "StoreEvent",
    "StoreStats",
    "UserForgotten",
    "UserNamed",
    "WriteResult",
]


@dataclass(frozen=True, slots=True)
class MessagePosted:
    """A message or a thread reply (``message.thread_ts``), live, backfilled or imported."""

    team: str
    message: Message


@dataclass(frozen=True, slots=True)
class MessageEdited:
    """``message_changed``: new text (and files, when given) as of ``edited_ts``."""

    team: str
    channel: str
    ts: str
    text: str
    edited_ts: str
    files: tuple[FileRef, ...] | None = None


@dataclass(frozen=True, slots=True)
class MessageDeleted:
    """``message_deleted`` (or ``chanctx forget --message``): a tombstone replaces the message."""

    team: str
    channel: str
    ts: str


@dataclass(frozen=True, slots=True)
class ReactionChanged:
    team: str
    channel: str
    ts: str
    name: str
    user: str
    added: bool


@dataclass(frozen=True, slots=True)
class PinChanged:
    team: str
    channel: str
    ts: str
    user: str
    pinned: bool


@dataclass(frozen=True, slots=True)
class FileShared:
    """A file record (metadata only; the bytes stay with the media cache)."""

    team: str
    file: FileRef
    channel: str | None = None
    ts: str | None = None


@dataclass(frozen=True, slots=True)
class FileDeleted:
    """``file_deleted``: the record goes, and the file leaves every message that carried it."""

    team: str
    file_id: str


@dataclass(frozen=True, slots=True)
class ChannelNamed:
    team: str
    channel: str
    name: str


@dataclass(frozen=True, slots=True)
class UserNamed:
    team: str
    user: str
    name: str


@dataclass(frozen=True, slots=True)
class ChannelForgotten:
    """``channel_deleted`` / ``group_deleted`` / ``chanctx forget --channel``."""

    team: str
    channel: str


@dataclass(frozen=True, slots=True)
class UserForgotten:
    """``chanctx forget --user``: every message of the user becomes a tombstone, names go."""

    team: str
    user: str


class BackfillCursor(BaseModel):
    """How far a backfill of one channel has come (saved in the batch with its messages, so a
    restart resumes exactly where the last commit left it)."""

    model_config = ConfigDict(frozen=True)

    cursor: str | None = None  # the Web API's next_cursor, None before the first page
    oldest_ts: str | None = None  # the oldest ts the backfill has stored
    complete: bool = False  # the channel's whole wanted range is stored
    updated: float = 0.0  # seconds since the epoch
    # The oldest ts the backfill wants (``--backfill recent``: 30 days back when it ran); None:
    # the channel's beginning. Reaching it ends the pass without making it ``complete``.
    goal_ts: str | None = None
    # The newest ts of the held range when it stops short of the present (an import: the
    # export's newest message); None: held up to now, live events keep it. What is newer is
    # the gap the first load and the backfill read from Slack (kind "history-gap" its progress).
    newest_ts: str | None = None


@dataclass(frozen=True, slots=True)
class CursorSaved:
    team: str
    channel: str
    kind: str  # "history" or "replies:<thread ts>": one cursor per paging walk
    cursor: BackfillCursor


StoreEvent = (
    MessagePosted
    | MessageEdited
    | MessageDeleted
    | ReactionChanged
    | PinChanged
    | FileShared
    | FileDeleted
    | ChannelNamed
    | UserNamed
    | ChannelForgotten
    | UserForgotten
    | CursorSaved
)


@dataclass(slots=True)
class WriteResult:
    """What one committed batch did; an import's summary adds these up."""

    applied: int = 0  # changed the store
    known: int = 0  # already stored as it is (or an older copy of an edited message)
    deleted: int = 0  # refused: a tombstone (or a forgotten channel) holds that key
    expired: int = 0  # refused: older than the retention horizon
    unknown: int = 0  # an edit, reaction or pin of a message the store does not hold
    erased: bool = False  # the batch removed text (an erase pass follows)

    def add(self, other: WriteResult) -> None:
        self.applied += other.applied
        self.known += other.known
        self.deleted += other.deleted
        self.expired += other.expired
        self.unknown += other.unknown
        self.erased = self.erased or other.erased


@dataclass(frozen=True, slots=True)
class Candidate:
    """A search candidate: a message's ts and its full-text score (higher is better)."""

    ts: str
    score: float


@dataclass(frozen=True, slots=True)
class ChannelKey:
    team: str
    channel: str


class ChannelStats(BaseModel):
    team: str
    channel: str
    name: str | None
    messages: int  # live messages, replies included
    threads: int  # roots with at least one live reply
    tombstones: int
    oldest_ts: str | None
    newest_ts: str | None
    backfill: BackfillCursor | None = None


class StoreStats(BaseModel):
    """``chanctx store stats``: what the store holds and what it costs on disk."""

    path: str
    schema_version: int
    channels: int
    messages: int
    threads: int
    tombstones: int
    bytes_on_disk: int  # the database file, its WAL and its shared-memory index
    per_channel: list[ChannelStats]


Scope = Literal["all", "timeline"]
