"""Durable append-only JSONL session logs, one file per Claude session (per Slack thread).

Durability: every append is one ``write`` of a whole line, flushed and ``os.fsync``ed before
``append`` returns; creating a file also fsyncs its directory, so the name survives a crash too.

Crash recovery: a crash mid-append can only tear the *last* line. ``entries()`` skips such a
line with one warning. The next ``append`` moves the torn bytes to ``<log>.torn`` (kept for
forensics, never read back) and truncates the log to the end of its last whole line before
writing, so the new entry starts on a fresh line and nothing after the tear is unreadable.
A bad line anywhere *before* the last one (damaged on disk, or edited by hand) is skipped with
one warning naming the file and line; the file itself is left as it is, for forensics.

One process per data directory (several bot replicas share Redis instead: ``RedisSessionStore``);
within a process a SessionLog is thread-safe and SessionStore hands out one per key.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import BinaryIO

from chanctx.manifest_store._entries import Entry, parse_entry
from chanctx.manifest_store._keys import SUFFIX, SessionKey
from chanctx.manifest_store.redaction import RedactionCount, Redactor, redact_file
from pydantic import ValidationError

__all__ = ["SessionLog", "SessionStore"]

logger = logging.getLogger("chanctx.manifest_store")

_CHUNK = 1 << 16


def _fsync_dir(path: Path) -> None:
    # A new directory entry is durable only once its directory is fsynced (POSIX).
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(path: Path) -> None:
    """mkdir -p, fsyncing the parent of every directory it creates."""
    missing: list[Path] = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for directory in reversed(missing):
        directory.mkdir(exist_ok=True)
        _fsync_dir(directory.parent)


def _reason(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def _last_line_start(file: BinaryIO, end: int) -> int:
    """Offset where the line ending at ``end`` (exclusive, newline excluded) begins."""
    position = end
    while position > 0:
        step = min(_CHUNK, position)
        file.seek(position - step)
        chunk = file.read(step)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return position - step + newline + 1
        position -= step
    return 0


def _parses(raw: bytes) -> bool:
    try:
        parse_entry(raw)
    except ValidationError:
        return False
    return True


class SessionLog:
    """One session's append-only log. Created on first append; thread-safe."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        # Size of the file right after our own last fsynced append: a file still that size
        # needs no tail check (the common case), anything else gets one.
        self._clean_size: int | None = None
        self._redacted = False  # erased Slack text replaced since the session was read

    @property
    def path(self) -> Path:
        return self._path

    def changed_elsewhere(self) -> bool:
        """True once after :meth:`redact` rewrote the file, so the session in memory is read
        again from it; no other process writes here (replicas share Redis instead)."""
        with self._lock:
            changed, self._redacted = self._redacted, False
            return changed

    def append(self, entry: Entry) -> None:
        line = entry.model_dump_json().encode() + b"\n"
        with self._lock:
            created = not self._path.exists()
            if created:
                _make_dirs(self._path.parent)
            with open(self._path, "a+b") as file:
                size = file.seek(0, os.SEEK_END)
                if size and size != self._clean_size:
                    self._repair_tail(file, size)
                file.write(line)
                file.flush()
                os.fsync(file.fileno())
                self._clean_size = file.tell()
            if created:
                _fsync_dir(self._path.parent)

    def redact(self, redactor: Redactor) -> RedactionCount:
        """Replace erased Slack text in this log (and its torn tail), atomically, between
        two appends."""
        with self._lock:
            count = redact_file(self._path, redactor)
            count.add(redact_file(self._path.with_name(self._path.name + ".torn"), redactor))
            self._clean_size = None  # the next append checks the new file's tail
            self._redacted = self._redacted or count.lines > 0
        return count

    def entries(self) -> list[Entry]:
        with self._lock:
            try:
                data = self._path.read_bytes()
            except FileNotFoundError:
                return []
        lines = data.split(b"\n")
        # The last element is b"" when the file ends with a newline; drop trailing blanks so
        # "last line" means the last one with content.
        while lines and not lines[-1].strip():
            lines.pop()
        result: list[Entry] = []
        offset = 0
        for number, raw in enumerate(lines, start=1):
            if raw.strip():
                try:
                    result.append(parse_entry(raw))
                except ValidationError as error:
                    if number < len(lines):
                        # A damaged line inside the log: skip it and keep everything else, so
                        # one bad line never costs the thread every later answer.
                        logger.warning(
                            "%s: line %d skipped (%s); the rest of the session is kept",
                            self._path,
                            number,
                            _reason(error),
                        )
                        offset += len(raw) + 1
                        continue
                    logger.warning(
                        "%s: torn last line at byte %d (%d bytes) skipped: %s",
                        self._path,
                        offset,
                        len(raw),
                        _reason(error),
                    )
            offset += len(raw) + 1
        return result

    def _repair_tail(self, file: BinaryIO, size: int) -> None:
        """Make the file end with a whole, parseable line before appending after it."""
        file.seek(size - 1)
        terminated = file.read(1) == b"\n"
        end = size - 1 if terminated else size
        start = _last_line_start(file, end)
        file.seek(start)
        last = file.read(end - start)
        if not last.strip() or _parses(last):
            if not terminated:  # a whole entry whose newline never made it to disk
                file.write(b"\n")
            return
        # A torn line: keep its bytes aside, then cut the log back to its last whole line.
        torn = self._path.with_name(self._path.name + ".torn")
        file.seek(start)
        record = {"offset": start, "bytes_b64": base64.b64encode(file.read(size - start)).decode()}
        with open(torn, "ab") as side:
            side.write(json.dumps(record).encode() + b"\n")
            side.flush()
            os.fsync(side.fileno())
        file.truncate(start)
        logger.warning(
            "%s: torn last line at byte %d (%d bytes) moved to %s before appending",
            self._path,
            start,
            size - start,
            torn.name,
        )


class SessionStore:
    """Every session log under ``data_dir/sessions``; one SessionLog object per key."""

    def __init__(self, data_dir: Path) -> None:
        self._dir = Path(data_dir) / "sessions"
        # The log of every session somebody holds, shared so that all appends to one file
        # take one lock; a log nobody holds is dropped (it has no open file: cheap to make
        # again), so this never grows past the sessions in memory.
        self._logs: weakref.WeakValueDictionary[SessionKey, SessionLog] = (
            weakref.WeakValueDictionary()
        )
        self._guard = threading.Lock()

    @property
    def directory(self) -> Path:
        return self._dir

    def open(self, key: SessionKey) -> SessionLog:
        # One object per key so every thread appending to a session shares its lock.
        with self._guard:
            log = self._logs.get(key)
            if log is None:
                log = self._logs[key] = SessionLog(self._dir / key.file_name)
            return log

    def exists(self, key: SessionKey) -> bool:
        return (self._dir / key.file_name).is_file()

    def forget(self, key: SessionKey) -> bool:
        """Delete a session's log (and any torn tail set aside); True if there was one."""
        with self._guard:
            self._logs.pop(key, None)
            path = self._dir / key.file_name
            found = path.is_file()
            for doomed in (path, path.with_name(path.name + ".torn")):
                doomed.unlink(missing_ok=True)
        if found:
            _fsync_dir(self._dir)
        return found

    def redact(self, redactor: Redactor) -> RedactionCount:
        """Replace erased Slack text in every session log on disk."""
        count = RedactionCount()
        for key in self.keys():
            count.add(self.open(key).redact(redactor))
        return count

    def expire(self, before: float) -> int:
        """Delete every session log last written before ``before`` (epoch seconds): what
        ``--retention-days`` allows it to quote is older still. How many went."""
        gone = 0
        for key in self.keys():
            try:
                written = (self._dir / key.file_name).stat().st_mtime
            except FileNotFoundError:
                continue
            if written < before and self.forget(key):
                gone += 1
        return gone

    def keys(self) -> list[SessionKey]:
        """Every session on disk, sorted: what a restarted bot resumes."""
        if not self._dir.is_dir():
            return []
        found = (SessionKey.from_file_name(p.name) for p in self._dir.glob("*" + SUFFIX))
        return sorted(key for key in found if key is not None)
