"""The turn store in the data dir: one fsynced JSONL file, for one process.

Each step of a turn's life (``base.py``) is one fsynced JSONL line before the next step is
taken. Turn ids and event ids stay known for ``remember_seconds`` after a turn is done.

A torn or corrupt line anywhere is skipped with one warning naming the file and line: the
journal is a log of facts, and losing one fact costs at most a re-answer check, never the rest.
The file is rewritten (live entries only, via a temporary file and a rename) when mostly stale.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from chanctx.manifest_store.jsonl import line_of, rewrite_atomically
from chanctx.manifest_store.redaction import Redactor
from chanctx.manifest_store.turns.base import OutboxEntry, PendingTurn

__all__ = ["TurnJournal"]

logger = logging.getLogger("chanctx.turns")
FILE_NAME = "turns.jsonl"
# Slack retries a delivery immediately, after 1 minute and after 5 minutes; a quarter of an
# hour of done turns covers that with room, and keeps memory flat under a steady load.
_REMEMBER = 900.0


class TurnJournal:
    """The local TurnStore: one append-only JSONL file in the data dir. Thread-safe."""

    def __init__(
        self,
        data_dir: Path | None,
        *,
        remember_seconds: float = _REMEMBER,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``data_dir`` None keeps the journal in memory only (tests, context-only replays)."""
        self.path = data_dir / FILE_NAME if data_dir is not None else None
        self._remember = remember_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._turns: dict[str, PendingTurn] = {}  # turns not yet done
        # A done turn is kept only to recognise Slack's retries: its id, when it was done, and
        # the event ids that brought it (insertion order is done order, so expiry pops from
        # the front). About 150 bytes a turn instead of a whole PendingTurn.
        self._done: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._events: dict[str, str] = {}  # event id -> turn id (pending or done)
        self._lines = 0
        self._handle: TextIO | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                self._load(self.path)
            self._handle = self.path.open("a", encoding="utf-8")
            _end_torn_line(self._handle, self.path)

    # -- the dispatch path ---------------------------------------------------------------

    def enqueue(self, turn_id: str, payload: dict[str, Any], event_id: str | None) -> bool:
        """Queue a turn durably; False (and nothing written) if it is known already."""
        with self._lock:
            known = turn_id in self._turns or turn_id in self._done
            if known or (event_id is not None and event_id in self._events):
                pending = self._turns.get(turn_id)
                if event_id and pending is not None and event_id not in self._events:
                    pending.event_ids.add(event_id)  # expires with the turn, never alone
                    self._events[event_id] = turn_id
                return False
            now = self._clock()
            # Durable first: if the disk refuses the line, nothing is remembered either, so
            # Slack's retry of this event (we answer it 503) is queued like a new one.
            self._write({"op": "queued", "turn": turn_id, "payload": payload, "event": event_id,
                         "at": now})  # fmt: skip
            turn = PendingTurn(turn_id, dict(payload), now, {event_id} if event_id else set())
            self._turns[turn_id] = turn
            if event_id:
                self._events[event_id] = turn_id
            return True

    def seen_event(self, event_id: str) -> bool:
        """True if this event id brought a turn that is still known (a retry of it)."""
        with self._lock:
            return event_id in self._events

    # -- the answer worker -----------------------------------------------------------------

    def write_reply(self, turn_id: str, parts: list[str]) -> None:
        with self._lock:
            turn = self._turns.get(turn_id)
            if turn is None or turn.parts is not None:
                return
            turn.parts = list(parts)
            self._write({"op": "reply", "turn": turn_id, "parts": parts})

    def mark_posted(self, turn_id: str, part: int, ts: str) -> None:
        with self._lock:
            turn = self._turns.get(turn_id)
            if turn is None or part in turn.posted:
                return
            turn.posted[part] = ts
            self._write({"op": "posted", "turn": turn_id, "part": part, "ts": ts})

    def mark_streaming(self, turn_id: str, part: int, ts: str) -> None:
        """A part's stream started as message ``ts``: after a crash it is finished, not redone."""
        with self._lock:
            turn = self._turns.get(turn_id)
            if turn is None or part in turn.posted or part in turn.streaming:
                return
            turn.streaming[part] = ts
            self._write({"op": "streaming", "turn": turn_id, "part": part, "ts": ts})

    def finish(self, turn_id: str) -> None:
        with self._lock:
            turn = self._turns.pop(turn_id, None)
            if turn is None:
                return
            now = self._clock()
            self._done[turn_id] = (now, tuple(sorted(turn.event_ids)))
            self._write({"op": "done", "turn": turn_id, "at": now})
            self._forget_old()

    # -- recovery ---------------------------------------------------------------------------

    def pending(self) -> list[PendingTurn]:
        """Turns queued and never answered, oldest first."""
        with self._lock:
            waiting = [t for t in self._turns.values() if t.parts is None]
        return sorted(waiting, key=lambda t: t.queued_at)

    def outbox(self) -> list[OutboxEntry]:
        """Answers written but not all confirmed posted, oldest first."""
        with self._lock:
            open_ = [t for t in self._turns.values() if t.parts is not None]
            return [
                OutboxEntry(
                    t.turn_id,
                    dict(t.payload),
                    tuple(t.parts or ()),
                    dict(t.posted),
                    {p: ts for p, ts in t.streaming.items() if p not in t.posted},
                )
                for t in sorted(open_, key=lambda t: t.queued_at)
            ]

    def is_done(self, turn_id: str) -> bool:
        with self._lock:
            return turn_id in self._done

    def counts(self) -> dict[str, int]:
        """How many turns the journal holds in memory, by state (for status and tests)."""
        with self._lock:
            answered = sum(1 for t in self._turns.values() if t.parts is not None)
            return {
                "pending": len(self._turns) - answered,
                "outbox": answered,
                "done": len(self._done),
                "event_ids": len(self._events),
            }

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    # -- the file -----------------------------------------------------------------------------

    def _write(self, entry: dict[str, Any]) -> None:
        # Caller holds the lock. One write of a whole line, then fsync: the line is durable
        # before the caller acknowledges, posts or moves on.
        if self._handle is None:
            self._lines += 1
            return
        try:
            self._handle.write(line_of(entry))
            self._handle.flush()
            os.fsync(self._handle.fileno())
        except OSError:
            self._reopen()  # a failed line must not sit in the buffer and land later
            raise
        self._lines += 1

    def redact(self, redactor: Redactor) -> int:
        """Erased Slack text out of the pending turns (the question, a written answer) and
        out of the file, which is rewritten to what is live (atomically); the turns changed."""
        if not redactor:
            return 0
        with self._lock:
            changed = 0
            for turn in self._turns.values():
                payload = redactor.value(turn.payload)
                parts = redactor.value(turn.parts) if turn.parts is not None else None
                if payload != turn.payload or parts != turn.parts:
                    turn.payload, turn.parts = payload, parts
                    changed += 1
            self._rewrite()  # done turns keep only their ids: no text survives the rewrite
            return changed

    def _reopen(self) -> None:
        assert self.path is not None and self._handle is not None
        with contextlib.suppress(OSError):
            self._handle.close()  # the fd is closed even when the last flush fails
        self._handle = self.path.open("a", encoding="utf-8")

    def _forget_old(self) -> None:
        """Drop done turns older than the retry window; rewrite the file when mostly stale."""
        self._expire_done()
        if self._lines > 4 * max(len(self._turns) + len(self._done), 64):
            self._rewrite()

    def _expire_done(self) -> None:
        cutoff = self._clock() - self._remember
        expired: list[str] = []
        for turn_id, (done_at, _) in self._done.items():  # oldest first
            if done_at >= cutoff:
                break
            expired.append(turn_id)
        for turn_id in expired:
            for event_id in self._done.pop(turn_id)[1]:
                self._events.pop(event_id, None)

    def _rewrite(self) -> None:
        if self.path is None or self._handle is None:
            self._lines = 0
            return
        entries = [
            *self._done_entries(),
            *(e for t in sorted(self._turns.values(), key=lambda t: t.queued_at)
              for e in _entries_of(t)),
        ]  # fmt: skip
        self._handle.close()
        self._lines = rewrite_atomically(self.path, entries)
        self._handle = self.path.open("a", encoding="utf-8")

    def _done_entries(self) -> list[dict[str, Any]]:
        """A done turn rewritten as what recognising a retry needs: its events, then done."""
        entries: list[dict[str, Any]] = []
        for turn_id, (done_at, event_ids) in self._done.items():
            for event_id in event_ids or (None,):
                entries.append({"op": "queued", "turn": turn_id, "payload": {}, "event": event_id,
                                "at": done_at})  # fmt: skip
            entries.append({"op": "done", "turn": turn_id, "at": done_at})
        return entries

    def _load(self, path: Path) -> None:
        with path.open("rb") as raw:
            for number, line in enumerate(raw, 1):
                self._lines += 1
                try:
                    self._apply(json.loads(line))
                except (ValueError, KeyError, TypeError, AttributeError):
                    logger.warning("%s:%d: skipped an unreadable line", path, number)
        self._done = dict(sorted(self._done.items(), key=lambda item: item[1][0]))
        self._expire_done()

    def _apply(self, entry: dict[str, Any]) -> None:
        op, turn_id = entry["op"], str(entry["turn"])
        if op == "queued":
            payload = entry["payload"]
            if not isinstance(payload, dict):
                raise TypeError("payload")
            if turn_id in self._done:
                return  # a rewrite never writes this; an old file might
            turn = self._turns.setdefault(
                turn_id, PendingTurn(turn_id, payload, float(entry["at"]))
            )
            if entry.get("event"):
                turn.event_ids.add(str(entry["event"]))
                self._events[str(entry["event"])] = turn_id
            return
        if op == "done":
            if turn_id in self._done:
                return
            done = self._turns.pop(turn_id)  # unknown turn: its queued line was lost
            self._done[turn_id] = (float(entry["at"]), tuple(sorted(done.event_ids)))
            return
        if turn_id in self._done:
            return  # a late fact about a turn already done (a rewrite keeps no such line)
        turn = self._turns[turn_id]  # a fact about an unknown turn: its queued line was lost
        if op == "reply":
            turn.parts = [str(p) for p in entry["parts"]]
        elif op == "posted":
            turn.posted[int(entry["part"])] = str(entry["ts"])
        elif op == "streaming":
            turn.streaming[int(entry["part"])] = str(entry["ts"])
        else:
            raise KeyError(op)


def _end_torn_line(handle: TextIO, path: Path) -> None:
    """A crash mid-write leaves a last line without its newline; the next entry must not be
    glued to it (it would be lost with it), so the torn line is closed first and stays skipped."""
    with path.open("rb") as raw:
        raw.seek(0, os.SEEK_END)
        if raw.tell() == 0:
            return
        raw.seek(-1, os.SEEK_END)
        if raw.read(1) == b"\n":
            return
    handle.write("\n")
    handle.flush()
    os.fsync(handle.fileno())


def _entries_of(turn: PendingTurn) -> list[dict[str, Any]]:
    events: list[str | None] = [*sorted(turn.event_ids)] or [None]
    entries: list[dict[str, Any]] = [
        {"op": "queued", "turn": turn.turn_id, "payload": turn.payload, "event": event,
         "at": turn.queued_at}
        for event in events
    ]  # fmt: skip
    if turn.parts is not None:
        entries.append({"op": "reply", "turn": turn.turn_id, "parts": turn.parts})
    entries += [
        {"op": "streaming", "turn": turn.turn_id, "part": part, "ts": ts}
        for part, ts in sorted(turn.streaming.items())
        if part not in turn.posted
    ]
    entries += [
        {"op": "posted", "turn": turn.turn_id, "part": part, "ts": ts}
        for part, ts in sorted(turn.posted.items())
    ]
    return entries
