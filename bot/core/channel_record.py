"""The engine's side of the durable channel store: events in before the ack, history out after a
restart.

``OpenStore`` is the one store of a process (one data dir, every workspace of an ``--oauth``
install: each key names its team) with its group committer, and remembers why the last write
failed, for ``/readyz``. ``ChannelRecord`` is one workspace's view of it, which the context
engine holds: ``write`` blocks until the events are committed (so the caller may acknowledge
them), and raises an ``OSError`` when they could not be stored (the event is then refused and
Slack delivers it again). ``store_events`` is the adapter from what an event meant for the
caches (``bot/slack/intake.py``) to what the store records.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from chanctx.bot.core.backfill_plan import GAP, gap_after, loaded_cursors
from chanctx.bot.slack.intake import Delete, Edit, IntakeAction, Pin, React, Record
from chanctx.cache.channel_store import (
    ChannelForgotten,
    ChannelNamed,
    ChannelStore,
    CursorSaved,
    FileDeleted,
    GroupCommitter,
    MessageDeleted,
    MessageEdited,
    MessagePosted,
    PartOutcomes,
    PinChanged,
    ReactionChanged,
    StoreEvent,
    UserNamed,
    WriteResult,
    write_parts,
)
from chanctx.context import Message

__all__ = ["ChannelRecord", "OpenStore", "store_events"]

logger = logging.getLogger("chanctx.channel_store")
_HISTORY = "history"  # the cursor kind of a channel's recent history, loaded once from Slack
_FORGOTTEN_EVENTS = frozenset({"channel_deleted", "group_deleted"})


class OpenStore:
    """The process's channel store, its group committer and its health."""

    def __init__(self, store: ChannelStore, *, max_bytes: int | None = None) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self._committer = GroupCommitter(store)
        self._problem: str | None = None
        self._lock = threading.Lock()
        self._written = 0
        self._closed = False

    @property
    def problem(self) -> str | None:
        """Why the last write failed (None once a write succeeds): what ``/readyz`` says."""
        with self._lock:
            return self._problem

    def write(self, events: Sequence[StoreEvent]) -> None:
        """Commit ``events`` (with whatever other callers submit meanwhile); an OSError if
        they were not stored."""
        if not events:
            return
        outcome: WriteResult | Exception
        try:
            outcome = self._committer.submit(events)
        except Exception as error:
            outcome = error
        (failed,) = self._settled([outcome], [len(events)])
        if failed is not None:
            raise failed

    def write_parts(self, parts: Sequence[Sequence[StoreEvent]]) -> list[Exception | None]:
        """Commit ``parts`` (each one event's records, in order) in one transaction on this
        thread (``write_parts``: a batch of one's own needs no writer thread); for each
        part, None when stored, an OSError when not (refuse its events: what :meth:`write`
        raises), another exception when one of its events was malformed."""
        outcomes: PartOutcomes
        if self._closed:
            outcomes = [OSError("the channel store is closed")] * len(parts)
        else:
            try:
                outcomes = write_parts(self.store, parts)
            except Exception as error:  # the disk refused the whole batch
                outcomes = [error] * len(parts)
        return self._settled(outcomes, [len(part) for part in parts])

    def _settled(self, outcomes: PartOutcomes, counts: Sequence[int]) -> list[Exception | None]:
        """Each part's failure (None: stored); the health and the size bound kept; one log
        line for all the refused."""
        failures: list[Exception | None] = []
        stored = refused = 0
        problem: str | None = None
        for outcome, count in zip(outcomes, counts, strict=True):
            if isinstance(outcome, WriteResult):
                failures.append(None)
                stored, problem = stored + count, None
            elif isinstance(outcome, OSError):
                failures.append(outcome)
                refused, problem = refused + count, str(outcome)
            elif isinstance(outcome, sqlite3.Error):  # an I/O error SQLite does not call "full"
                problem = f"channel store: {outcome}"
                failures.append(OSError(problem))
                refused += count
            else:
                failures.append(outcome)
        if refused:
            logger.error("refused %d events: %s", refused, problem)
        due = False
        with self._lock:
            if refused or stored:
                self._problem = problem  # what the last of them found
            self._written += stored
            due = self.max_bytes is not None and self._written >= 5_000
            if due:
                self._written = 0
        if due:
            self.maintain()
        return failures

    def write_later(self, events: Sequence[StoreEvent]) -> None:
        """For what need not be acknowledged (a name learned, a page fetched): queued for the
        next commit; a failure is logged, and Slack is asked again after a restart."""
        if not events or self._closed:
            return

        def done(future: Any) -> None:
            error = future.exception()
            if error is not None:
                logger.warning("could not store %d fetched records: %s", len(events), error)

        try:
            self._committer.submit_nowait(events).add_done_callback(done)
        except RuntimeError:  # closing
            return

    @property
    def closed(self) -> bool:
        return self._closed

    def health(self, problem: str | None) -> None:
        """What a check of the store found, outside any write: a problem refuses events (and
        ``/readyz``) until a write or a later check succeeds; None clears it."""
        with self._lock:
            self._problem = problem

    def maintain(self, *, purge: bool = False) -> None:
        """Retention (``purge``) and the size bound: the oldest messages go first."""
        try:
            if purge:
                gone = self.store.purge()
                if gone:
                    logger.info("channel store: %d messages past the retention period erased", gone)
            if self.max_bytes is not None:
                self.store.enforce_size(self.max_bytes)
        except (OSError, sqlite3.Error) as error:
            logger.warning("channel store maintenance postponed: %s", error)

    def start_maintenance(
        self, every: float = 3_600.0, *, purge_every: float = 86_400.0
    ) -> threading.Event:
        """A daemon thread: purge at start and every ``purge_every`` s, enforce the size bound
        every ``every`` s; set the returned event to stop it."""
        stop = threading.Event()
        every = min(every, purge_every)

        def run() -> None:
            last_purge = 0.0
            while not stop.is_set():
                due = time.monotonic() - last_purge >= purge_every or last_purge == 0.0
                if due:
                    last_purge = time.monotonic()
                self.maintain(purge=due)
                stop.wait(every)

        threading.Thread(target=run, name="channel-store-maintenance", daemon=True).start()
        return stop

    def close(self) -> None:
        """Commit what is queued, run a pending erase pass, release the data dir."""
        if self._closed:
            return
        self._closed = True
        self._committer.close()
        self.store.close()


class ChannelRecord:
    """One workspace's view of the channel store (every read and write names ``team``)."""

    def __init__(self, opened: OpenStore, team: str) -> None:
        self.opened = opened
        self.store = opened.store
        self.team = team

    def write(self, events: Sequence[StoreEvent]) -> None:
        self.opened.write(events)

    def record(self, action: IntakeAction, event: Mapping[str, Any] | None = None) -> None:
        """Store what one event meant, before it is acknowledged (OSError: refuse it)."""
        events = store_events(self.team, action, event)
        if isinstance(action, Record) and action.only_if_new:
            # app_mention repeats the message event: it must not undo what that one stored.
            message = action.message
            if self.store.get(self.team, message.channel, message.ts) is not None:
                events = []
        self.write(events)

    # -- what Slack told us, kept so a restart need not ask again -----------------------------

    def knows_history(self, channel: str) -> bool:
        """True once the channel's recent history was loaded from Slack into the store: from
        then on live events keep it, and a restart reads it here."""
        return self.store.cursor(self.team, channel, _HISTORY) is not None

    def recent(self, channel: str, limit: int) -> list[Message]:
        return self.store.messages(self.team, channel, limit=limit)

    def thread(self, channel: str, root_ts: str) -> tuple[Message | None, list[Message]]:
        root, replies = self.store.thread(self.team, channel, root_ts)  # one read
        if root is not None and root.deleted and not root.reply_count:
            root = None
        return root, replies

    def warmed(self, channel: str, messages: Sequence[Message], *, limit: int) -> None:
        """A page of ``conversations.history``: stored with its cursor in one batch."""
        held = self.store.cursor(self.team, channel, _HISTORY)
        gap = self.store.cursor(self.team, channel, GAP) if gap_after(held) else None
        oldest = messages[0].ts if messages else None
        moved = loaded_cursors(held, gap, oldest, len(messages) >= limit, time.time())
        saved = [CursorSaved(self.team, channel, kind, c) for kind, c in moved.items()]
        self.opened.write_later([*self._posted(messages), *saved])

    def gap_after(self, channel: str) -> str | None:
        """For a channel held from an import: its newest stored ts, after which Slack's
        messages are still to read (None: not held, or held up to now)."""
        return gap_after(self.store.cursor(self.team, channel, _HISTORY))

    def fetched(self, messages: Sequence[Message]) -> None:
        """Messages fetched from Slack (a thread, one message)."""
        self.opened.write_later(self._posted(messages))

    def named(self, kind: str, key: str, name: str) -> None:
        event: StoreEvent = (
            UserNamed(self.team, key, name)
            if kind == "user"
            else ChannelNamed(self.team, key, name)
        )
        self.opened.write_later([event])

    def names(self) -> tuple[dict[str, str], dict[str, str]]:
        """(users, channels) names learned before this start."""
        return self.store.user_names(self.team), self.store.channel_names(self.team)

    def forget_team(self) -> None:
        """An uninstall: every channel of the team is erased."""
        channels = [key.channel for key in self.store.channels(self.team)]
        self.write([ChannelForgotten(self.team, channel) for channel in channels])

    def _posted(self, messages: Sequence[Message]) -> list[StoreEvent]:
        return [MessagePosted(self.team, m) for m in messages if not m.deleted]


def store_events(
    team: str, action: IntakeAction, event: Mapping[str, Any] | None = None
) -> list[StoreEvent]:
    """What the store records for one event: the intake's action, or (for events intake
    ignores) a deletion of a channel or a file, a channel's or a person's new name."""
    if isinstance(action, Record):
        return [MessagePosted(team, action.message)]
    if isinstance(action, Edit):
        # A change Slack made without an edit (an unfurl, a thread's counters) is versioned
        # by the event's own time, so it still replaces what it changed.
        when = action.edited_ts or (event.get("event_ts") if event is not None else None)
        if not isinstance(when, str) or not when:
            return []
        return [MessageEdited(team, action.channel, action.ts, action.text, when, action.files)]
    if isinstance(action, Delete):
        return [MessageDeleted(team, action.channel, action.ts)]
    if isinstance(action, React):
        return [
            ReactionChanged(team, action.channel, action.ts, action.name, action.user, action.added)
        ]
    if isinstance(action, Pin):
        message = action.message
        user = str(event.get("user") or "") if event is not None else ""
        pinned = PinChanged(team, message.channel, message.ts, user, action.added)
        return [MessagePosted(team, message), pinned] if action.added else [pinned]
    return _other_events(team, event) if event is not None else []


def _other_events(team: str, event: Mapping[str, Any]) -> list[StoreEvent]:
    kind = event.get("type")
    if kind in _FORGOTTEN_EVENTS and isinstance(event.get("channel"), str):
        return [ChannelForgotten(team, str(event["channel"]))]
    if kind == "file_deleted" and isinstance(event.get("file_id"), str):
        return [FileDeleted(team, str(event["file_id"]))]
    if kind in ("channel_rename", "group_rename"):
        channel = event.get("channel")
        if isinstance(channel, Mapping) and isinstance(channel.get("id"), str):
            name = channel.get("name")
            if isinstance(name, str) and name:
                return [ChannelNamed(team, str(channel["id"]), name)]
    if kind == "user_change":
        user = event.get("user")
        if isinstance(user, Mapping) and isinstance(user.get("id"), str):
            profile = user.get("profile")
            shown = profile.get("display_name") if isinstance(profile, Mapping) else None
            name = shown or user.get("real_name") or user.get("name")
            if isinstance(name, str) and name:
                return [UserNamed(team, str(user["id"]), name)]
    return []
