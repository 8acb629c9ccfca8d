"""A Slack export turned into the store's rows: everything of an import but the writing.

``parsed`` reads the export's records (``reader.py``) and turns each day file into a
``DayRows``: its messages as the store's rows (plain ones by ``plain_row``, the rest through
live intake), the file records they carry, and what was ignored or refused. The importer
writes what it yields; it runs in the importer's own process, or, for a large export, in a
second process (``parse_process.py``) so that on two cores the parse and SQLite's inserts
overlap.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chanctx.bot.export.reader import (
    ExportChannel,
    ExportDay,
    ExportMessage,
    ExportUser,
    Problem,
    RawDay,
    has_surrogate_escape,
    is_slack_ts,
    message_problem,
    parse_day,
    read_export,
    unicode_problem,
)
from chanctx.bot.export.rows import plain_row
from chanctx.bot.export.source import open_source
from chanctx.bot.export.typed_day import typed_day
from chanctx.bot.slack.intake import Ignore, Record, SelfIdentity, intake
from chanctx.cache.channel_store import MessageRow, row_of, row_words
from chanctx.context import ChanctxError, FileRef, Message

__all__ = ["DayRows", "Item", "ParsingStopped", "parsed"]


class ParsingStopped(ChanctxError):
    """The parsing process ended before the export did (killed, out of memory, a bug): what
    was written stays, and running the import again goes on from there."""


@dataclass
class DayRows:
    """One day file's rows, the file records its messages carry and its counts."""

    channel: str
    rows: list[MessageRow] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # each row's index_words, in its order
    files: list[tuple[FileRef, str]] = field(default_factory=list)  # (file, message ts)
    read: int = 0  # messages with a usable ts
    ignored: int = 0  # no conversation in them (joins), as live intake ignores them
    problems: list[str] = field(default_factory=list)  # refused, one line each


Item = ExportUser | ExportChannel | Problem | DayRows


def parsed(path: Path, only: set[str] | None) -> Generator[Item, None, None]:
    """The export's users, conversations and problems as read, each day file as its rows."""
    source = open_source(path)
    try:
        me = SelfIdentity()
        for record in read_export(source, only=only, days="raw"):
            if isinstance(record, RawDay):
                yield raw_day_rows(record, me)
            elif not isinstance(record, ExportMessage | ExportDay):  # days="raw" gives neither
                yield record
    finally:
        source.close()


def raw_day_rows(day: RawDay, me: SelfIdentity) -> DayRows | Problem:
    """A day file's rows: by typed decoding (``typed_day``) when it takes the day, else as
    ``day_rows`` reads it (or the problem that kept it from being read)."""
    if not has_surrogate_escape(day.data):
        out = DayRows(day.channel.id)

        def intake_row(raw: dict[str, Any], index: int) -> tuple[MessageRow, str] | None:
            where = ExportMessage(day.channel, raw, f"{day.name} #{index}")
            message = _message(where, me, out)
            if message is None:
                return None
            out.files.extend((f, message.ts) for f in message.files)
            row = row_of(message)
            return row, row_words(row)

        found = typed_day(day.data, intake_row, out.files)
        if found is not None:
            out.rows, out.words, out.read = found
            return out
    parsed_day = parse_day(day)
    return parsed_day if isinstance(parsed_day, Problem) else day_rows(parsed_day, me)


def day_rows(day: ExportDay, me: SelfIdentity) -> DayRows:
    """A day's messages: plain ones straight to rows, the rest through live intake."""
    out = DayRows(day.channel.id)
    rows, words, fullmatch, escapes = out.rows, out.words, is_slack_ts, day.escapes
    for index, raw in enumerate(day.messages):
        # message_problem's test, inline: a dict whose ts is a Slack ts (most are).
        ts = raw.get("ts") if type(raw) is dict else None
        problem = None if type(ts) is str and fullmatch(ts) else message_problem(raw, "")
        if problem is None and escapes:
            problem = unicode_problem(raw, "")
        if problem is not None:
            out.problems.append(f"{day.name} #{index}: {problem.what}")
            continue
        out.read += 1
        row = plain_row(raw)
        if row is None:
            message = _message(ExportMessage(day.channel, raw, f"{day.name} #{index}"), me, out)
            if message is None:
                continue
            row = row_of(message)
            out.files.extend((f, message.ts) for f in message.files)
        rows.append(row)
        words.append(row_words(row))
    return out


def _message(record: ExportMessage, me: SelfIdentity, out: DayRows) -> Message | None:
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
        out.problems.append(f"{record.where}: {action.reason.split(': ', 1)[-1]}")
        return None
    # Ignored as live intake ignores it (joins, leaves); an edit or deletion event in an
    # export is not a message of its own.
    out.ignored += 1
    return None
