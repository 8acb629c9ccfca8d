"""The per-event decisions both backends' appliers share (the rules themselves are in ``_rules``).

An event is decided the same way whatever holds the rows: read the stored row, ask the rule,
write the outcome, count it. What differs between SQLite and PostgreSQL is left to the backend:
how a row is read and written (SQLite keeps its full-text shards in step by hand, PostgreSQL
holds row writes back and sends them together), what an erase costs, and the statements whose
spelling differs (column names, upserts, how a file id is found in ``more``). The statements
spelt the same on both are written here once with ``?`` placeholders and run by :meth:`_run`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from chanctx.cache import ts_key
from chanctx.cache.channel_store._records import (
    ChannelForgotten,
    ChannelNamed,
    CursorSaved,
    FileDeleted,
    FileShared,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PinChanged,
    ReactionChanged,
    StoreEvent,
    UserForgotten,
    UserNamed,
    WriteResult,
)
from chanctx.cache.channel_store._rows import message_from_row
from chanctx.cache.channel_store._rules import (
    Refused,
    StoredRow,
    edited,
    posted_over,
    reacted_row,
    tally,
)
from chanctx.context import Message

__all__ = ["EventApplier", "RowMessage"]

Row = TypeVar("Row", bound=StoredRow)


@dataclass(slots=True)
class RowMessage:
    """The columns of a stored row both backends read back, and the message they make (each
    backend's row adds its own ``deleted`` and what else it keeps)."""

    ts: str
    thread_ts: str | None
    user_id: str
    text: str
    reply_count: int
    flags: int
    more: str | None
    version: int

    def message(self, channel: str) -> Message:
        return message_from_row(
            channel,
            self.ts,
            self.thread_ts,
            self.user_id,
            self.text,
            self.reply_count,
            self.flags,
            self.more,
        )


class EventApplier(ABC, Generic[Row]):
    """Applies store events; subclasses supply the row access and their own statements."""

    horizon: int | None  # ts keys below it are older than the retention period

    # -- what each backend supplies -----------------------------------------------------------

    @abstractmethod
    def _run(self, query: str, args: Sequence[object]) -> None:
        """Run ``query`` (``?`` placeholders, spelt alike on both backends)."""

    @abstractmethod
    def channel(self, team: str, channel: str) -> tuple[int, int | None]:
        """(channel id, erased_through) of ``team``/``channel``, created when new."""

    @abstractmethod
    def _row(self, chan: int, key: int) -> Row | None:
        """The stored row of ``key`` in channel ``chan``, if any."""

    @abstractmethod
    def _insert_new(self, chan: int, message: Message) -> bool:
        """Write ``message`` (not deleted) if its key holds no row yet: whether it did."""

    @abstractmethod
    def _write(self, chan: int, message: Message, old: Row | None) -> object:
        """Insert ``message`` or replace ``old`` with it."""

    @abstractmethod
    def _mark_erased(self, old: Row, result: WriteResult) -> None:
        """Words of ``old`` are gone from the rows: see they leave the index's bytes too."""

    @abstractmethod
    def _name_user(self, team: str, user: str, name: str) -> None: ...

    @abstractmethod
    def _set_pin(self, chan: int, key: int, user: str) -> None: ...

    @abstractmethod
    def _save_file(
        self, team: str, file_id: str, chan: int | None, key: int | None, record: str
    ) -> None: ...

    @abstractmethod
    def _carriers(self, team: str, file_id: str) -> list[tuple[str, int, Row]]:
        """(channel, channel id, row) of the team's rows whose ``more`` may name ``file_id``."""

    @abstractmethod
    def _drop_user(self, team: str, user: str) -> list[tuple[str, str]]:
        """Delete ``user``'s name; (channel, ts) of the team's live messages by them."""

    @abstractmethod
    def _forget_channel(self, team: str, channel: str, result: WriteResult) -> None: ...

    def _uncount_reply(self, chan: int, root: int) -> None:
        """One reply fewer on the thread root at key ``root`` (never below zero)."""
        self._run(
            "UPDATE messages SET reply_count = reply_count - 1 "
            "WHERE chan = ? AND ts_key = ? AND reply_count > 0",
            (chan, root),
        )

    # -- the shared decisions -----------------------------------------------------------------

    def apply(self, event: StoreEvent, result: WriteResult) -> None:
        match event:
            case MessagePosted():
                self._post(event.team, event.message, result)
            case MessageEdited():
                self._edit(event, result)
            case MessageDeleted():
                self._delete(event.team, event.channel, event.ts, result)
            case ReactionChanged():
                self._react(event, result)
            case PinChanged():
                self._pin(event, result)
            case FileShared():
                self._file_shared(event, result)
            case FileDeleted():
                self._file_deleted(event, result)
            case ChannelNamed():
                chan, _ = self.channel(event.team, event.channel)
                self._run("UPDATE channels SET name = ? WHERE id = ?", (event.name, chan))
                result.applied += 1
            case UserNamed():
                self._name_user(event.team, event.user, event.name)
                result.applied += 1
            case ChannelForgotten():
                self._forget_channel(event.team, event.channel, result)
            case UserForgotten():
                self._forget_user(event.team, event.user, result)
            case CursorSaved():
                chan, _ = self.channel(event.team, event.channel)
                self._run(
                    "INSERT INTO cursors (chan, kind, cursor) VALUES (?, ?, ?) "
                    "ON CONFLICT (chan, kind) DO UPDATE SET cursor = excluded.cursor",
                    (chan, event.kind, event.cursor.model_dump_json()),
                )
                result.applied += 1

    def _post(self, team: str, message: Message, result: WriteResult) -> None:
        if message.deleted:
            self._delete(team, message.channel, message.ts, result)
            return
        chan, erased_through = self.channel(team, message.channel)
        key = ts_key(message.ts)
        if erased_through is not None and key <= erased_through:
            result.deleted += 1
            return
        if self.horizon is not None and key < self.horizon:
            result.expired += 1
            return
        if self._insert_new(chan, message):
            result.applied += 1
            return
        old = self._row(chan, key)
        assert old is not None  # the key was taken, inside this transaction
        posted = posted_over(message, old)
        if posted.message is None:
            if posted.outcome == "deleted":
                result.deleted += 1
            else:
                result.known += 1
            return
        self._write(chan, posted.message, old)
        if posted.erases:
            self._mark_erased(old, result)
        result.applied += 1

    def _edit(self, event: MessageEdited, result: WriteResult) -> None:
        old = self._rewrite(event, lambda row: edited(row, event), result)
        if old is not None:  # applied: an edit of no stored row never is
            self._mark_erased(old, result)

    def _delete(self, team: str, channel: str, ts: str, result: WriteResult) -> None:
        chan, _ = self.channel(team, channel)
        key = ts_key(ts)
        old = self._row(chan, key)
        if old is not None and old.deleted:
            result.known += 1
            return
        stone = Message.model_construct(channel=channel, ts=ts, deleted=True)
        if old is None:
            self._write(chan, stone, None)  # remembered, so an older copy cannot return
            result.applied += 1
            return
        before = old.message(channel)
        if before.thread_ts is not None:
            stone = stone.model_copy(
                update={"thread_ts": before.thread_ts, "reply_count": before.reply_count}
            )
        self._write(chan, stone, old)
        self._run("DELETE FROM pins WHERE chan = ? AND ts_key = ?", (chan, key))
        if before.is_reply:
            assert before.thread_ts is not None
            self._uncount_reply(chan, ts_key(before.thread_ts))
        self._mark_erased(old, result)
        result.applied += 1

    def _react(self, event: ReactionChanged, result: WriteResult) -> None:
        self._rewrite(event, lambda row: reacted_row(row, event), result)

    def _rewrite(
        self,
        event: MessageEdited | ReactionChanged,
        change: Callable[[Row | None], Message | Refused],
        result: WriteResult,
    ) -> Row | None:
        """The stored row of ``event``'s message replaced by what ``change`` makes of it, or
        the refusal counted; the row it replaced (None when nothing was written)."""
        chan, _ = self.channel(event.team, event.channel)
        old = self._row(chan, ts_key(event.ts))
        after = change(old)
        if isinstance(after, str):
            tally(result, after)
            return None
        self._write(chan, after, old)
        result.applied += 1
        return old

    def _pin(self, event: PinChanged, result: WriteResult) -> None:
        chan, _ = self.channel(event.team, event.channel)
        key = ts_key(event.ts)
        old = self._row(chan, key)
        if old is None or old.deleted:
            result.unknown += 1
            return
        if event.pinned:
            self._set_pin(chan, key, event.user)
        else:
            self._run("DELETE FROM pins WHERE chan = ? AND ts_key = ?", (chan, key))
        result.applied += 1

    def _file_shared(self, event: FileShared, result: WriteResult) -> None:
        chan = key = None
        if event.channel is not None:
            chan, _ = self.channel(event.team, event.channel)
            key = None if event.ts is None else ts_key(event.ts)
        record = event.file.model_dump_json()
        self._save_file(event.team, event.file.artifact_id, chan, key, record)
        result.applied += 1

    def _file_deleted(self, event: FileDeleted, result: WriteResult) -> None:
        self._run("DELETE FROM files WHERE team = ? AND file_id = ?", (event.team, event.file_id))
        for channel, chan, old in self._carriers(event.team, event.file_id):
            before = old.message(channel)
            kept = tuple(f for f in before.files if f.artifact_id != event.file_id)
            if kept != before.files:
                self._write(chan, before.model_copy(update={"files": kept}), old)
                self._mark_erased(old, result)
        result.applied += 1

    def _forget_user(self, team: str, user: str, result: WriteResult) -> None:
        ignored = WriteResult()
        for channel, ts in self._drop_user(team, user):
            self._delete(team, channel, ts, ignored)
        result.applied += 1
        result.erased = True
