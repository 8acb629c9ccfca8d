"""``chanctx import``: a Slack export into the channel store, the way live events would put it.

Each exported message goes through the same intake as a live ``message`` event, so a join is
ignored and a topic change kept exactly as when the bot heard it; what intake keeps is written
as the store's events in batches (one transaction each). The store's rules make an import
idempotent and safe beside live events: ts is the key, a tombstone wins over the export, and an
older copy never undoes an edit. So an import that was stopped (or killed) is resumed by running
it again, and a later export adds only what is new.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from chanctx.bot.core.backfill_plan import HISTORY, imported_cursor
from chanctx.bot.export.reader import (
    ExportChannel,
    ExportDay,
    ExportMessage,
    ExportUser,
    Problem,
    message_problem,
    read_export,
    unicode_problem,
)
from chanctx.bot.export.rows import plain_row
from chanctx.bot.export.source import NotAnExport, open_source
from chanctx.bot.slack.intake import Ignore, Record, SelfIdentity, intake
from chanctx.cache.channel_store import (
    ChannelNamed,
    ChannelStore,
    CursorSaved,
    FileShared,
    MessageRow,
    PinChanged,
    StoreEvent,
    UserNamed,
    WriteResult,
    post_rows,
    row_of,
)
from chanctx.context import ChanctxError, Message

__all__ = ["ImportRefused", "ImportSummary", "import_export"]

BATCH = 5_000  # messages a transaction: big enough to amortise the commit, small to resume
_KEY = itemgetter(0)  # a row's ts as its exact sort key


class ImportRefused(ChanctxError):
    """Nothing could be imported: the path is not an export, or no workspace is known."""


@dataclass
class ImportSummary:
    """What an import did, for its one summary line and its exit status."""

    channels: int = 0
    users: int = 0
    read: int = 0  # messages read from day files
    imported: int = 0  # new or newer than what the store held
    known: int = 0  # already stored as they are
    deleted: int = 0  # refused: deleted live (a tombstone) or in a forgotten channel
    expired: int = 0  # older than the retention period
    ignored: int = 0  # no conversation in them (joins, leaves), as the live path ignores them
    refused: int = 0  # malformed messages and files that could not be read
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        rate = self.read / self.seconds if self.seconds > 0 else 0.0
        return (
            f"imported {self.imported:,} of {self.read:,} messages from {self.channels:,} "
            f"conversations ({self.users:,} users): {self.known:,} already known, "
            f"{self.deleted:,} skipped as deleted, {self.expired:,} past retention, "
            f"{self.ignored:,} not conversation, {self.refused:,} refused as malformed; "
            f"{self.seconds:.1f} s, {rate:,.0f} messages/s"
        )

    @property
    def exit_status(self) -> int:
        return 1 if self.refused else 0

    def count(self, result: WriteResult) -> None:
        self.imported += result.applied
        self.known += result.known + result.unknown
        self.deleted += result.deleted
        self.expired += result.expired


def import_export(
    path: Path,
    store: ChannelStore,
    *,
    team: str | None = None,
    only: set[str] | None = None,
    on_problem: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    progress: Callable[[int, int], None] | None = None,
) -> ImportSummary:
    """Import the export at ``path`` into ``store``; ``progress(messages, channels)`` is told
    after every batch. ``ImportRefused`` when nothing can be read."""
    started = time.monotonic()
    try:
        source = open_source(path)
    except NotAnExport as error:
        raise ImportRefused(str(error)) from None
    summary = ImportSummary()
    try:
        records = read_export(source, only=only, days=True)
        users, first = _leading_users(records)
        workspace = team or _team_of(users)
        if workspace is None:
            raise ImportRefused(
                f"{path}: the export's users.json names no workspace; give it with --team T..."
            )
        _write(store, [UserNamed(workspace, u.id, _name(u)) for u in users])
        summary.users = len(users)
        _import_rest(store, workspace, first, records, summary, on_problem, progress)
    finally:
        source.close()
    if summary.channels == 0 and summary.read == 0:
        raise ImportRefused(f"{path}: no conversation found (no channels.json, groups.json, ...)")
    summary.seconds = time.monotonic() - started
    return summary


def _leading_users(records: Iterator[Any]) -> tuple[list[ExportUser], Any]:
    """The users (which come first) and the first record after them (None at the end)."""
    users: list[ExportUser] = []
    for record in records:
        if not isinstance(record, ExportUser):
            return users, record
        users.append(record)
    return users, None


def _team_of(users: list[ExportUser]) -> str | None:
    teams = {u.team for u in users if u.team}
    return teams.pop() if len(teams) == 1 else None


def _name(user: ExportUser) -> str:
    return user.display_name or user.real_name or user.name or user.id


class _Batch:
    """One conversation's rows waiting for their transaction, and the events that follow.

    (Writing on a thread of its own while the next day files were parsed was tried: SQLite
    releases the GIL, but on this 2-core machine the handoffs cost more CPU and wall time than
    the overlap saved.)
    """

    def __init__(self, store: ChannelStore, team: str, summary: ImportSummary) -> None:
        self.store, self.team, self.summary = store, team, summary
        self.channel = ""
        self.rows: list[MessageRow] = []
        self.other: list[StoreEvent] = []  # names and file records, after the rows
        self.pins: list[StoreEvent] = []  # written once every message is in
        self.oldest: MessageRow | None = None  # the conversation's oldest and newest rows
        self.newest: MessageRow | None = None

    def flush(self) -> None:
        """One transaction for the rows, then one for the names and file records."""
        if self.rows:
            self._span(self.rows)
            self.summary.count(post_rows(self.store, self.team, self.channel, self.rows))
        _write(self.store, self.other)
        self.rows, self.other = [], []

    def next_channel(self, channel: str) -> None:
        """The conversation's last rows, then the range it held as its history cursor."""
        self.flush()
        if self.oldest is not None and self.newest is not None:
            held = self.store.cursor(self.team, self.channel, HISTORY)
            moved = imported_cursor(held, self.oldest[1], self.newest[1], time.time())
            if moved is not None:  # a start reads the range from the store, not from Slack
                _write(self.store, [CursorSaved(self.team, self.channel, HISTORY, moved)])
        self.channel, self.oldest, self.newest = channel, None, None

    def _span(self, rows: list[MessageRow]) -> None:
        low, high = min(rows, key=_KEY), max(rows, key=_KEY)
        if self.oldest is None or low[0] < self.oldest[0]:
            self.oldest = low
        if self.newest is None or high[0] > self.newest[0]:
            self.newest = high


def _import_rest(
    store: ChannelStore,
    team: str,
    first: Any,
    records: Iterator[Any],
    summary: ImportSummary,
    on_problem: Callable[[str], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    batch = _Batch(store, team, summary)
    _read_all(batch, first, records, on_problem, progress)
    batch.next_channel("")
    if progress is not None:
        progress(summary.read, summary.channels)
    # Pins name messages, so they go once every message is in.
    _write(store, batch.pins)


def _read_all(
    batch: _Batch,
    first: Any,
    records: Iterator[Any],
    on_problem: Callable[[str], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    team, summary, pins = batch.team, batch.summary, batch.pins
    me = SelfIdentity()

    def refuse(problem: Problem | str) -> None:
        summary.refused += 1
        summary.problems.append(str(problem))
        on_problem(str(problem))

    for record in _chain(first, records):
        if isinstance(record, Problem):
            refuse(record)
        elif isinstance(record, ExportChannel):
            summary.channels += 1
            batch.other.append(ChannelNamed(team, record.id, record.name))
            pins += [PinChanged(team, record.id, ts, "", True) for ts in record.pins]
        elif isinstance(record, ExportDay):
            if record.channel.id != batch.channel:
                batch.next_channel(record.channel.id)
            _day(record, batch, me, refuse)
            if len(batch.rows) >= BATCH:
                batch.flush()
                if progress is not None:
                    progress(summary.read, summary.channels)


def _day(
    day: ExportDay, batch: _Batch, me: SelfIdentity, refuse: Callable[[Problem | str], None]
) -> None:
    """A day's messages into ``batch``: plain ones straight to rows, the rest through intake."""
    rows, summary = batch.rows, batch.summary
    for index, raw in enumerate(day.messages):
        problem = message_problem(raw, day.name)
        if problem is None and day.escapes:
            problem = unicode_problem(raw, day.name)
        if problem is not None:
            refuse(Problem(f"{day.name} #{index}", problem.what))
            continue
        summary.read += 1
        row = plain_row(raw)
        if row is not None:
            rows.append(row)
            continue
        message = _message(
            ExportMessage(day.channel, raw, f"{day.name} #{index}"), me, summary, refuse
        )
        if message is not None:
            rows.append(row_of(message))
            batch.other.extend(
                FileShared(batch.team, f, message.channel, message.ts) for f in message.files
            )


def _chain(first: Any, rest: Iterable[Any]) -> Iterator[Any]:
    if first is not None:
        yield first
    yield from rest


def _message(
    record: ExportMessage,
    me: SelfIdentity,
    summary: ImportSummary,
    refuse: Callable[[str], None],
) -> Message | None:
    """The exported message as live intake would record it; None when it records nothing."""
    raw = dict(record.message)
    if "file" in raw and "files" not in raw and isinstance(raw["file"], dict):
        raw["files"] = [raw["file"]]  # exports before 2019 carry one file, singular
    raw["channel"] = record.channel.id
    raw.setdefault("type", "message")
    action = intake(raw, me)  # never raises: a malformed message is an Ignore saying so
    if isinstance(action, Record):
        return action.message
    if isinstance(action, Ignore) and action.reason.startswith("malformed "):
        refuse(f"{record.where}: {action.reason.split(': ', 1)[-1]}")
        return None
    # Ignored as live intake ignores it (joins, leaves); an edit or deletion event in an
    # export is not a message of its own.
    summary.ignored += 1
    return None


def _write(store: ChannelStore, events: list[StoreEvent]) -> WriteResult:
    return store.write(events) if events else WriteResult()
