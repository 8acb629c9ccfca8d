"""``chanctx import``: a Slack export into the channel store, the way live events would put it.

Each exported message goes through the same intake as a live ``message`` event, so a join is
ignored and a topic change kept exactly as when the bot heard it; what intake keeps is written
as the store's events in batches (one transaction each). The store's rules make an import
idempotent and safe beside live events: ts is the key, a tombstone wins over the export, and an
older copy never undoes an edit. So an import that was stopped (or killed) is resumed by running
it again, and a later export adds only what is new.

The reading and row building (``parsing.py``) run here for a small export and in a second
process for a large one, whose rows this process writes while the next are built; each
conversation's last write is followed by its ``history`` cursor (the range the export held),
so a start reads the channel from the store (``imported_cursor``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from chanctx.bot.core.backfill_plan import HISTORY, imported_cursor
from chanctx.bot.export.parse_process import parse_in_worker
from chanctx.bot.export.parsing import DayRows, Item, parsed
from chanctx.bot.export.reader import ExportChannel, ExportUser, Problem
from chanctx.bot.export.source import NotAnExport, open_source
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
)
from chanctx.cache.channel_store.bulk import checkpoints_aside
from chanctx.context import ChanctxError

__all__ = [
    "PARALLEL_BYTES",
    "ImportRefused",
    "ImportSummary",
    "day_bytes",
    "import_export",
    "spare_core",
]

BATCH = 20_000  # messages a transaction: big enough to amortise the commit, small to resume
# The first transactions are smaller (doubling up to BATCH): the writer's first commit need not
# wait for a whole batch to be parsed, so it starts while the parsing process goes on.
FIRST_BATCH = 2_000
# Day files past this size (uncompressed) are parsed in a second process: below it, starting
# that process (about a second of imports) costs more than the overlap saves.
PARALLEL_BYTES = 16 * 2**20
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
    parallel: bool | None = None,
) -> ImportSummary:
    """Import the export at ``path`` into ``store``; ``progress(messages, channels)`` is told
    after every batch. ``ImportRefused`` when nothing can be read. ``parallel``: parse in a
    second process while this one writes (None: when the export's day files are large and a
    core is idle)."""
    started = time.monotonic()
    try:
        size = day_bytes(path)
    except NotAnExport as error:
        raise ImportRefused(str(error)) from None
    if parallel is None:
        parallel = size >= PARALLEL_BYTES and spare_core()
    items = parse_in_worker(path, only) if parallel else parsed(path, only)
    summary = ImportSummary()
    try:
        users, first = _leading_users(items)
        workspace = team or _team_of(users)
        if workspace is None:
            raise ImportRefused(
                f"{path}: the export's users.json names no workspace; give it with --team T..."
            )
        _write(store, [UserNamed(workspace, u.id, _name(u)) for u in users])
        summary.users = len(users)
        with checkpoints_aside(store):  # started once the parsing process is (a fork)
            _import_rest(store, workspace, first, items, summary, on_problem, progress)
    finally:
        items.close()
    if summary.channels == 0 and summary.read == 0:
        raise ImportRefused(f"{path}: no conversation found (no channels.json, groups.json, ...)")
    summary.seconds = time.monotonic() - started
    return summary


def spare_core() -> bool:
    """True when a core is idle now (the load average leaves one): a second process only pays
    then; on cores others keep busy it adds its handover's CPU and saves no time (measured:
    0.76x the one-process rate at a load of 7 on 2 cores)."""
    return (os.cpu_count() or 1) - os.getloadavg()[0] >= 1.0


def day_bytes(path: Path) -> int:
    """The bytes of the export's files in folders (its day files), uncompressed; NotAnExport
    when the path cannot be read as one."""
    source = open_source(path)
    try:
        return source.total_bytes(lambda name: "/" in name)
    finally:
        source.close()


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
    """One conversation's rows waiting for their transaction, and the events that follow."""

    def __init__(self, store: ChannelStore, team: str, summary: ImportSummary) -> None:
        self.store, self.team, self.summary = store, team, summary
        self.channel = ""
        self.rows: list[MessageRow] = []
        self.words: list[str] = []  # each row's index_words
        self.other: list[StoreEvent] = []  # names and file records, after the rows
        self.pins: list[StoreEvent] = []  # written once every message is in
        self.oldest: MessageRow | None = None  # the conversation's oldest and newest rows
        self.newest: MessageRow | None = None

    def flush(self) -> None:
        """One transaction for the rows, then one for the names and file records."""
        if self.rows:
            self._span(self.rows)
            self.summary.count(
                post_rows(self.store, self.team, self.channel, self.rows, self.words)
            )
        _write(self.store, self.other)
        self.rows, self.words, self.other = [], [], []

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
    items: Iterator[Item],
    summary: ImportSummary,
    on_problem: Callable[[str], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    batch = _Batch(store, team, summary)
    _read_all(batch, first, items, on_problem, progress)
    batch.next_channel("")
    if progress is not None:
        progress(summary.read, summary.channels)
    # Pins name messages, so they go once every message is in.
    _write(store, batch.pins)


def _read_all(
    batch: _Batch,
    first: Any,
    items: Iterator[Item],
    on_problem: Callable[[str], None],
    progress: Callable[[int, int], None] | None,
) -> None:
    team, summary, pins = batch.team, batch.summary, batch.pins
    limit = FIRST_BATCH

    def refuse(problem: str) -> None:
        summary.refused += 1
        summary.problems.append(problem)
        on_problem(problem)

    for item in _chain(first, items):
        if isinstance(item, DayRows):
            if item.channel != batch.channel:
                batch.next_channel(item.channel)
            for problem in item.problems:
                refuse(problem)
            summary.read += item.read
            summary.ignored += item.ignored
            batch.rows += item.rows
            batch.words += item.words
            batch.other += (FileShared(team, f, item.channel, ts) for f, ts in item.files)
            if len(batch.rows) >= limit:
                batch.flush()
                limit = min(BATCH, 2 * limit)
                if progress is not None:
                    progress(summary.read, summary.channels)
        elif isinstance(item, Problem):
            refuse(str(item))
        elif isinstance(item, ExportChannel):
            summary.channels += 1
            batch.other.append(ChannelNamed(team, item.id, item.name))
            pins += [PinChanged(team, item.id, ts, "", True) for ts in item.pins]


def _chain(first: Any, rest: Iterable[Any]) -> Iterator[Any]:
    if first is not None:
        yield first
    yield from rest


def _write(store: ChannelStore, events: list[StoreEvent]) -> WriteResult:
    return store.write(events) if events else WriteResult()
