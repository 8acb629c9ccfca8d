"""Forgetting what Slack forgets, and what an operator asks to forget (``chanctx forget``).

The channel store erases a message's text from its own file (``cache/channel_store``, the erase
pass); what the bot wrote while answering may quote it too: a session log holds the context
Claude was shown, the turn journal the question. This module takes the text out of both.

- :func:`plan_erasure` reads, before anything is erased, what a ``forget`` request covers:
  the store events to write and the texts that are about to go (the marker replaces them in
  the data dir's files afterwards).
- :class:`Forgetting` runs a request in the running bot: the events go through the bot's own
  group committer (which runs the erase pass), the engines drop the messages from their
  caches and indexes, then the data dir's files are redacted: each running writer redacts its
  own file under its own lock (``Redactable``), the rest of the tree is rewritten directly.
- :class:`RedactingStore` is the process's store with one addition: the old text of a deleted
  or edited message (live ``message_deleted`` / ``message_changed``) is redacted from the data
  dir's files after the event is committed, on a background thread, off the ack path.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from chanctx.bot.core.channel_record import OpenStore
from chanctx.bot.core.forget_request import ForgetAnswer, ForgetRequest
from chanctx.cache.channel_store import (
    ChannelForgotten,
    ChannelStore,
    MessageDeleted,
    MessageEdited,
    StoreEvent,
    UserForgotten,
)
from chanctx.manifest_store.redaction import RedactionCount, Redactor, redact_tree

__all__ = [
    "STORE_FILES",
    "Erasure",
    "Expiring",
    "Forgetting",
    "Redactable",
    "RedactingStore",
    "plan_erasure",
    "redact_data_dir",
]

logger = logging.getLogger("chanctx.forget")
# The channel store's own files: its erase pass cleans them (a rewrite from outside would
# corrupt the database).
STORE_FILES = frozenset({"channels.sqlite3", "channels.sqlite3-wal", "channels.sqlite3-shm",
                         "channels.lock"})  # fmt: skip


class Redactable(Protocol):
    """A running writer of files in the data dir that can redact them under its own lock."""

    def redact(self, redactor: Redactor) -> object: ...


@runtime_checkable
class Expiring(Protocol):
    """A writer whose files ``--retention-days`` ages out (the session logs)."""

    def expire(self, before: float) -> int: ...


@dataclass
class Erasure:
    """What one request erases: the events to write and the texts leaving with them."""

    events: list[StoreEvent] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    dropped: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (team, ch) -> ts
    channels: list[tuple[str, str]] = field(default_factory=list)  # forgotten whole
    messages: int = 0
    teams: list[str] = field(default_factory=list)

    def answer(self) -> ForgetAnswer:
        return ForgetAnswer(
            messages=self.messages,
            channels=len(self.channels),
            teams=sorted(set(self.teams)),
        )


def _teams(store: ChannelStore, request: ForgetRequest) -> list[str]:
    """The teams the request reaches: the named one, or each team the store has the channel
    of (every team for a person)."""
    if request.team is not None:
        return [request.team]
    keys = store.channels()
    if request.channel is not None:
        return sorted({k.team for k in keys if k.channel == request.channel})
    return sorted({k.team for k in keys})


def plan_erasure(store: ChannelStore, request: ForgetRequest) -> Erasure:
    """Read what ``request`` erases (the store is not changed)."""
    plan = Erasure()
    for team in _teams(store, request):
        if request.user is not None:
            _plan_user(store, team, request.user, plan)
        elif request.ts is not None:
            assert request.channel is not None
            _plan_message(store, team, request.channel, request.ts, plan)
        elif request.channel is not None:
            _plan_channel(store, team, request.channel, plan)
    return plan


def _plan_channel(store: ChannelStore, team: str, channel: str, plan: Erasure) -> None:
    if channel not in {k.channel for k in store.channels(team)}:
        return
    gone = plan.dropped.setdefault((team, channel), [])
    for batch in store.iter_messages(team, channel):
        plan.texts.extend(m.text for m in batch if m.text)
        gone.extend(m.ts for m in batch)
    plan.messages += len(gone)
    plan.channels.append((team, channel))
    plan.teams.append(team)
    plan.events.append(ChannelForgotten(team, channel))


def _plan_user(store: ChannelStore, team: str, user: str, plan: Erasure) -> None:
    name = store.user_names(team).get(user)
    found = 0
    for key in store.channels(team):
        for batch in store.iter_messages(team, key.channel):
            own = [m for m in batch if m.user_id == user]
            plan.texts.extend(m.text for m in own if m.text)
            plan.dropped.setdefault((team, key.channel), []).extend(m.ts for m in own)
            found += len(own)
    if found or name is not None:
        if name:  # "alice: ..." in a session log names them too
            plan.texts.append(name)
        plan.messages += found
        plan.teams.append(team)
        plan.events.append(UserForgotten(team, user))


def _plan_message(store: ChannelStore, team: str, channel: str, ts: str, plan: Erasure) -> None:
    message = store.get(team, channel, ts)
    # Written even for a message the store never held: the tombstone keeps a later backfill
    # or import from bringing it back.
    plan.events.append(MessageDeleted(team, channel, ts))
    if message is None or message.deleted:
        return
    if message.text:
        plan.texts.append(message.text)
    plan.dropped.setdefault((team, channel), []).append(ts)
    plan.messages += 1
    plan.teams.append(team)


def redact_data_dir(
    data_dir: Path,
    texts: Iterable[str],
    *,
    owners: Sequence[Redactable] = (),
    held: Callable[[Path], bool] = lambda path: False,
) -> RedactionCount:
    """Replace ``texts`` in every file of the data dir but the channel store's: ``owners``
    redact the files they hold open; ``held`` names those files, which the walk skips."""
    redactor = Redactor(texts)
    count = RedactionCount()
    if not redactor:
        return count
    for owner in owners:
        done = owner.redact(redactor)
        if isinstance(done, RedactionCount):
            count.add(done)

    def skip(path: Path) -> bool:
        return path.name in STORE_FILES or held(path)

    count.add(redact_tree(data_dir, redactor, skip=skip))
    return count


class RedactingStore(OpenStore):
    """The process's store; the old text of a live deletion or edit is redacted from the data
    dir after the commit (``on_erased``, set once the bot's writers exist)."""

    on_erased: Callable[[list[str]], None] | None = None

    def write(self, events: Sequence[StoreEvent]) -> None:
        texts = self._leaving(events) if self.on_erased is not None else []
        super().write(events)
        if texts and self.on_erased is not None:
            self.on_erased(texts)

    def write_planned(self, events: Sequence[StoreEvent]) -> None:
        """A ``forget`` whose texts were read by its plan (which redacts them itself)."""
        super().write(events)

    def _leaving(self, events: Sequence[StoreEvent]) -> list[str]:
        """The stored texts these events take away (read before they are written)."""
        texts: list[str] = []
        for event in events:
            if isinstance(event, MessageDeleted | MessageEdited):
                old = self.store.get(event.team, event.channel, event.ts)
                if old is None or old.deleted or not old.text:
                    continue
                # An edit that keeps the old text (words added) erases nothing visible.
                if isinstance(event, MessageEdited) and old.text in event.text:
                    continue
                texts.append(old.text)
            elif isinstance(event, ChannelForgotten):
                for batch in self.store.iter_messages(event.team, event.channel):
                    texts.extend(m.text for m in batch if m.text)
        return texts


class Forgetting:
    """``forget`` requests and live erasures in the running bot."""

    def __init__(
        self,
        opened: OpenStore,
        data_dir: Path,
        *,
        drop_cached: Callable[[str, str, Sequence[str]], None],
        owners: Sequence[Redactable] = (),
        held: Callable[[Path], bool] = lambda path: False,
    ) -> None:
        """``drop_cached(team, channel, ts)``: the engine of ``team`` forgets those messages."""
        self.opened = opened
        self.data_dir = data_dir
        self.drop_cached = drop_cached
        self.owners = list(owners)
        self.held = held
        self._lock = threading.Lock()  # one redaction of the files at a time
        self._queue: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()

    def plan(self, request: ForgetRequest) -> Erasure:
        return plan_erasure(self.opened.store, request)

    def run(self, plan: Erasure) -> ForgetAnswer:
        """Redact the data dir's files, write the plan's events (the erase pass runs with
        them), drop the messages from the caches, redact again; what was erased.

        Files first: a kill -9 before the store write leaves the texts in the store, so the
        same ``forget`` run again finds them and finishes; the second pass catches a quote an
        answer wrote meanwhile."""
        count = self.redact(plan.texts)
        if isinstance(self.opened, RedactingStore):
            self.opened.write_planned(plan.events)
        else:
            self.opened.write(plan.events)
        for (team, channel), ts in plan.dropped.items():
            self.drop_cached(team, channel, ts)
        count.add(self.redact(plan.texts))
        answer = plan.answer()
        answer.files, answer.lines = count.files, count.lines
        return answer

    def redact(self, texts: Sequence[str]) -> RedactionCount:
        with self._lock:
            return redact_data_dir(self.data_dir, texts, owners=self.owners, held=self.held)

    def expire(self, retention_days: int, *, now: float | None = None) -> int:
        """Delete the session logs nobody wrote to within the retention period; how many."""
        before = (time.time() if now is None else now) - retention_days * 86_400
        with self._lock:
            return sum(o.expire(before) for o in self.owners if isinstance(o, Expiring))

    def start_expiry(self, retention_days: int, every: float) -> None:
        """At start and every ``every`` s, on a daemon thread that ``close`` stops."""

        def run() -> None:
            while True:
                try:
                    gone = self.expire(retention_days)
                except OSError as error:
                    logger.warning("session logs past the retention period kept: %s", error)
                    gone = 0
                if gone:
                    logger.info("%d session logs past the retention period deleted", gone)
                if self._stop.wait(every):
                    return

        threading.Thread(target=run, name="chanctx-expiry", daemon=True).start()

    def redact_later(self, texts: list[str]) -> None:
        """From the ack path: queued for the background redactor."""
        if self._worker is None:
            self._worker = threading.Thread(target=self._drain, name="chanctx-redact", daemon=True)
            self._worker.start()
        self._queue.put(texts)

    def close(self) -> None:
        self._stop.set()
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join(timeout=30)

    def _drain(self) -> None:
        while (texts := self._queue.get()) is not None:
            pending = list(texts)
            while True:  # a burst of deletions: one pass over the files for all of them
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)
                    break
                pending.extend(more)
            try:
                count = self.redact(pending)
            except OSError as error:
                logger.warning("could not redact erased text from the data dir: %s", error)
                continue
            if count.lines:
                logger.info(
                    "erased text replaced in %d lines of %d files in the data dir",
                    count.lines,
                    count.files,
                )
