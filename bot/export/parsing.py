"""A Slack export turned into the store's rows: everything of an import but the writing.

``parsed`` reads the export's records (``reader.py``) and turns each day file into a
``DayRows``: its messages as the store's rows (plain ones by ``plain_row``, the rest through
live intake), the file records they carry, and what was ignored or refused. The importer
writes what it yields; it runs in the importer's own process, or, for a large export, in a
second process (``parse_in_worker``) so that on two cores the parse and SQLite's inserts
overlap: the rows cross a pipe in chunks (pickled tuples, cheap beside building them), whose
capacity bounds the memory both sides hold.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import itertools
import json
import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec
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

__all__ = ["DayRows", "Item", "ParsingStopped", "main", "parse_in_worker", "parsed"]

_CHUNK: Final = 2_000  # messages a handoff: few of them, little held
_PIPES: Final = 8  # pipes the chunks take in turn: what they hold together may wait
_PIPE_BYTES: Final = 2**20  # each pipe's capacity where Linux allows it (its usual limit)
_HEADER: Final = 8  # bytes of a chunk's length before it
# A chunk's rows and words go as MessagePack, decoded typed (the rows come back as tuples):
# a third of what unpickling them costs the importer, whose core is the busier one.
_ROWS = tuple[int, str, int | None, str | None, str, str, int, int, str | None, int, int]
_BULK = msgspec.msgpack.Decoder(list[tuple[list[_ROWS], list[str]]])
_PACK = msgspec.msgpack.Encoder()
# Imported, not run as __main__, so that the items pickle under this module's name.
_WORKER: Final = (
    "import sys; from chanctx.bot.export.parsing import main; raise SystemExit(main(sys.argv[1:]))"
)


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


# -- the second process -----------------------------------------------------------------------


def parse_in_worker(path: Path, only: set[str] | None) -> Generator[Item, None, None]:
    """``parsed`` run in a process of its own (``main``), its items handed over in chunks
    through ``_PIPES`` pipes taken in turn, so that up to their capacity together (about
    ``_PIPES`` MB on Linux, a few transactions' worth) waits: the worker does not stop at each
    of the importer's commits, and the importer finds the next chunk built. No thread on
    either side (a reading thread's GIL hand-offs slowed the importer's SQLite steps).
    Closing the iterator (or an error here) kills the worker; a worker whose importer is gone
    (kill -9) dies on its next write to a pipe."""
    pipes = [os.pipe() for _ in range(_PIPES)]
    ends = [io.FileIO(read, "r") for read, _ in pipes]
    try:
        command = [sys.executable, "-c", _WORKER, str(path), ",".join(str(w) for _, w in pipes)]
        if only is not None:
            command.append(json.dumps(sorted(only)))
        for _, write in pipes:
            _widen(write)
        worker = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=[w for _, w in pipes],
        )
    except BaseException:
        for end in ends:
            end.close()
        raise
    finally:
        for _, write in pipes:
            os.close(write)
    try:
        for turn in itertools.count():
            chunk = _receive(ends[turn % _PIPES])
            if chunk is None:
                raise ParsingStopped(f"the parsing process stopped (exit status {worker.wait()})")
            if isinstance(chunk, str):
                raise ParsingStopped(f"the parsing process failed: {chunk}")
            if not chunk:  # the end mark
                return
            yield from chunk
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
        for end in ends:
            end.close()


def _widen(fd: int) -> None:
    """Give the pipe ``_PIPE_BYTES`` where the system lets us (Linux); else it keeps its own."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)


def _receive(end: io.FileIO) -> list[Item] | str | None:
    """The next chunk from ``end``: its items (empty: the end mark), the worker's error, or
    None when the pipe ends before the chunk does."""
    header = _read_exact(end, 2 * _HEADER)
    if header is None:
        return None
    head = _read_exact(end, int.from_bytes(header[:_HEADER], "big"))
    rows = _read_exact(end, int.from_bytes(header[_HEADER:], "big"))
    if head is None or rows is None:
        return None
    # Written by our own worker (values only: the export never reaches pickle opcodes).
    chunk: list[Item] | str | None = pickle.loads(head)
    if chunk is None:
        return []
    if isinstance(chunk, list):
        days = iter(_BULK.decode(rows))
        for item in chunk:
            if isinstance(item, DayRows):
                item.rows, item.words = next(days)
    return chunk


def _read_exact(end: io.FileIO, size: int) -> bytearray | None:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        count = end.readinto(view[got:])
        if not count:
            return None
        got += count
    return data


def _hand_over(out: io.FileIO, chunk: list[Item] | str | None) -> None:
    """The chunk pickled without its rows and words, then those as MessagePack, each part's
    length first; written whole (a pipe may take it in parts)."""
    bulk = []
    for item in chunk if isinstance(chunk, list) else ():
        if isinstance(item, DayRows):
            bulk.append((item.rows, item.words))
            item.rows, item.words = [], []
    data = pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    rows = _PACK.encode(bulk)
    frame = memoryview(
        len(data).to_bytes(_HEADER, "big") + len(rows).to_bytes(_HEADER, "big") + data + rows
    )
    while frame:
        frame = frame[out.write(frame) or 0 :]


def main(argv: list[str]) -> int:
    """The worker: ``EXPORT FDS [ONLY_JSON]``; chunks of items on the pipes ``FDS`` (comma
    separated) in turn, then the end mark None (or the text of the error that stopped it)."""
    logging.getLogger("chanctx.intake").setLevel(logging.ERROR)  # the importer names each one
    outs = [io.FileIO(int(fd), "w") for fd in argv[1].split(",")]
    only = set(json.loads(argv[2])) if len(argv) > 2 else None
    turn = itertools.count()
    chunk: list[Item] = []
    size = 0
    try:
        try:
            for item in parsed(Path(argv[0]), only):
                chunk.append(item)
                size += len(item.rows) if isinstance(item, DayRows) else 1
                if size >= _CHUNK:
                    _hand_over(outs[next(turn) % len(outs)], chunk)
                    chunk, size = [], 0
            if chunk:
                _hand_over(outs[next(turn) % len(outs)], chunk)
            _hand_over(outs[next(turn) % len(outs)], None)
        except BrokenPipeError:
            raise
        except Exception as error:  # the importer reports it
            _hand_over(outs[next(turn) % len(outs)], f"{type(error).__name__}: {error}")
    except BrokenPipeError:  # the importer is gone
        os._exit(1)
    return 0
