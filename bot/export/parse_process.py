"""The parsing process: ``parsed`` run beside the importer, its rows handed over through pipes.

For a large export the importer only writes (SQLite's inserts are the busier side) while a
second process reads the day files and builds their rows (``parsing.parsed``):

* It is forked when the importer runs one thread (``chanctx import`` does): the child has
  every module imported already, so its first rows come in a tenth of a second instead of
  after the second a fresh interpreter takes to import chanctx (measured at 200,000
  messages: the worker's CPU 3.3 s against 4.3 s, its first rows at 0.1-0.2 s against
  1.3-1.4 s). The child closes every descriptor but its pipes and stdio first (the store's
  lock and database among them: a killed importer's data dir is free as soon as it dies,
  and the child cannot touch the connection; stdin and stdout become /dev/null, as a fresh
  worker's are, so whoever reads the importer's output is not held by it), freezes the garbage collector (nothing
  inherited is finalized in it) and leaves by ``os._exit`` (no cleanup of the parent's
  objects). With other threads running, whose locks a fork would copy held or not, a fresh
  interpreter runs ``main`` instead.
* The chunks go through ``_PIPES`` pipes taken in turn, each ``_PIPE_BYTES`` where Linux
  allows: what they hold together (about 8 MB, two of the importer's transactions) may wait,
  so neither side stops at the other's every step. One pipe of 64 KB made them take turns;
  a thread reading ahead in the importer cost its SQLite steps GIL hand-offs. A chunk is its
  items pickled without their rows and words, those as MessagePack, each part's length first.
* A killed importer's worker dies on its next write to a pipe (EPIPE); a worker that fails
  sends its error as its last chunk, and one that dies is reported as ``ParsingStopped``.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import itertools
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from typing import Final, NoReturn

import msgspec
from chanctx.bot.export.parsing import DayRows, Item, ParsingStopped, parsed

__all__ = ["main", "parse_in_worker"]

_CHUNK: Final = 2_000  # messages a handoff: few of them, little held
_PIPES: Final = 8  # pipes the chunks take in turn: what they hold together may wait
_PIPE_BYTES: Final = 2**20  # each pipe's capacity where Linux allows it (its usual limit)
_HEADER: Final = 8  # bytes of each part's length, before the parts
# A chunk's rows and words go as MessagePack, decoded typed (the rows come back as tuples):
# a third of what unpickling them costs the importer, whose core is the busier one.
_ROWS = tuple[int, str, int | None, str | None, str, str, int, int, str | None, int, int]
_BULK = msgspec.msgpack.Decoder(list[tuple[list[_ROWS], list[str]]])
_PACK = msgspec.msgpack.Encoder()
# Imported, not run as __main__, so that the items pickle under their modules' names.
_WORKER: Final = (
    "import sys; from chanctx.bot.export.parse_process import main; "
    "raise SystemExit(main(sys.argv[1:]))"
)


class _Forked:
    """A forked worker, with the three calls of ``subprocess.Popen`` the importer makes."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.status: int | None = None

    def poll(self) -> int | None:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
        return self.status

    def wait(self) -> int:
        if self.status is None:
            self.status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        return self.status

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


def parse_in_worker(path: Path, only: set[str] | None) -> Generator[Item, None, None]:
    """``parsed`` run in a second process, its items as it builds them. Closing the iterator
    (or an error here) kills the worker."""
    pipes = [os.pipe() for _ in range(_PIPES)]
    writes = [write for _, write in pipes]
    ends = [io.FileIO(read, "r") for read, _ in pipes]
    try:
        for write in writes:
            _widen(write)
        worker = _start(path, only, writes)
    except BaseException:
        for end in ends:
            end.close()
        raise
    finally:
        for write in writes:
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


def _start(
    path: Path, only: set[str] | None, writes: list[int]
) -> subprocess.Popen[bytes] | _Forked:
    args = [str(path), ",".join(map(str, writes))]
    if only is not None:
        args.append(json.dumps(sorted(only)))
    if threading.active_count() > 1:
        return subprocess.Popen(
            [sys.executable, "-c", _WORKER, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            pass_fds=writes,
        )
    pid = os.fork()
    if pid:
        return _Forked(pid)
    _child(args, writes)


def _child(args: list[str], writes: list[int]) -> NoReturn:
    status = 1
    try:
        gc.freeze()
        _close_all_but({0, 1, 2, *writes})
        quiet = os.open(os.devnull, os.O_RDWR)  # stdin and stdout as the fresh worker's
        for fd in (0, 1):
            if fd != quiet:
                os.dup2(quiet, fd)
        if quiet > 1:
            os.close(quiet)
        status = main(args)
    finally:
        os._exit(status)


def _close_all_but(keep: set[int]) -> None:
    """Close every inherited descriptor not in ``keep``."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number up to the highest kept, then the rest at once
        open_fds = list(range(max(keep) + 1))
        os.closerange(max(keep) + 1, os.sysconf("SC_OPEN_MAX"))
    for fd in open_fds:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


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
    """The chunk pickled without its rows and words, then those as MessagePack; written
    whole (a pipe may take it in parts)."""
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
