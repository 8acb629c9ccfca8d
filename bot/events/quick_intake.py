"""Intake without Bolt's dispatch, for the events no listener answers, in batches.

Most of what Slack sends a busy workspace is people's messages in channels, their edits and
deletions, and reactions. For these chanctx only records: the event is stored (fsynced, before
the ack) and nothing after intake acts on it (channels are answered on ``app_mention``,
reactions are votes counted by intake itself). Bolt's dispatch around that (a second parse of
the body, a request context, a middleware chain, listener matching) and a worker thread per
request, each woken once per group commit, cost the process far more CPU than the intake.

``QuickIntake.take`` runs on the event loop with the envelope the HTTP layer parsed (once) and
checked: it picks the event out and queues it for one intake thread, which takes whatever is
waiting at once and, for each workspace's share of it, runs the steps the intake middleware
runs for one event:

- dedup of Slack's retries (``first_delivery``) for the events the middleware dedups (a
  message is recorded idempotently, so a retry of it needs none);
- what each event means (``intake``) and what it stores, written by this thread in one
  transaction, each event's records a part of its own (``write_parts``: one malformed event
  fails alone);
- once committed: an event not stored (an ``OSError``) is refused with ``STORE_FAILED`` so
  Slack delivers it again (a deduped one's id is forgotten so the retry gets through), the
  others are applied to the caches in order, reactions counted as votes; the answers are all
  set with one wake-up of the event loop.

While the thread commits, the events that arrive queue up and make the next batch, and so the
next commit, larger. Deciding the next batch while the last one commits was tried and cost
more CPU an event, without a steady gain in rate; handing each batch to the store's writer
thread and waiting for it bought no overlap either, only a wake-up each way and a ``Future``
an event (docs/design.md, "The quick intake commits its own batch"). Nothing is answered, nor
applied to the caches, before its commit.

Everything else (mentions, DMs, the assistant pane, commands, url_verification, installs,
replicas' change stream, a workspace whose runtime is not running yet) goes through Bolt.
The HTTP layer only asks here after it checked the request's signature on the bytes, or when
the Bolt app checks none (``GuardedApp.signing_secret``).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from chanctx.bot.core.channel_record import store_events
from chanctx.bot.core.runtime import Runtime
from chanctx.bot.slack.envelope import STORE_FAILED, describe_error
from chanctx.bot.slack.intake import IntakeAction, intake
from chanctx.cache.channel_store import StoreEvent
from slack_bolt.request.internals import extract_team_id

__all__ = ["NO_LISTENER_CHANNELS", "QuickIntake", "record_alone"]

logger = logging.getLogger("chanctx.listeners")
# Where a message event needs nothing after intake (a DM, "im", may be a question).
NO_LISTENER_CHANNELS: Final = frozenset({"channel", "group", "mpim"})
# Events recorded by intake alone whose retries are dropped by their event id.
_DEDUPED: Final = frozenset({"reaction_added", "reaction_removed"})
MAX_BATCH: Final = 1_000  # events one intake pass takes: one commit, one wake-up

# (team id) -> the team's runtime if it is running here; never builds one (never blocks).
RunningRuntime = Callable[[str | None], Runtime | None]


def needs_no_listener(event: Mapping[str, Any]) -> bool:
    """Whether intake alone is everything chanctx does with this event."""
    kind = event.get("type")
    if kind == "message":
        return event.get("channel_type") in NO_LISTENER_CHANNELS
    return kind in _DEDUPED


def record_alone(runtime: Runtime, event: Mapping[str, Any], event_id: object) -> int:
    """Store one event no listener answers, on the caller's thread (Bolt's intake middleware:
    Socket Mode, or an app without the quick path); the status to answer."""
    dedup = event.get("type") != "message"
    if dedup and not runtime.first_delivery(event_id if isinstance(event_id, str) else None):
        logger.info("dropped a retried delivery of %s", event_id)
        return 200
    try:
        runtime.intake(event)  # in the channel store (fsynced) before the ack
    except OSError as error:
        if dedup:
            runtime.refused(event_id)  # Slack's retry of it must get through
        logger.error("could not store an event, so it is refused: %s", error)
        return STORE_FAILED
    return 200


@dataclass(slots=True)
class _Waiting:
    runtime: Runtime
    event: dict[str, Any]
    event_id: object
    answer: asyncio.Future[int]
    status: int = field(default=200)
    action: IntakeAction | None = None  # None: nothing to apply (a retry, or it failed)


class QuickIntake:
    """``await take(envelope)``: the status answered for an event recorded here, or None when
    the envelope is Bolt's to dispatch."""

    def __init__(self, running: RunningRuntime) -> None:
        self._running = running
        # A SimpleQueue: its put and get are C, where a Condition's notify and wait run
        # Python on both threads for every event.
        self._queue: queue.SimpleQueue[_Waiting] = queue.SimpleQueue()
        self._start = threading.Lock()
        self._thread: threading.Thread | None = None

    async def take(self, body: dict[str, Any]) -> int | None:
        if body.get("type") != "event_callback":
            return None
        event = body.get("event")
        if not isinstance(event, dict) or not needs_no_listener(event):
            return None
        team = extract_team_id(body)
        runtime = self._running(team if isinstance(team, str) else None)
        if runtime is None or runtime.replicas is not None:
            # Not running here yet (Bolt builds it, or says it is not installed), or
            # replicas: the change stream records it.
            return None
        answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if self._thread is None:
            self._started()
        self._queue.put(_Waiting(runtime, event, body.get("event_id"), answer))
        return await answer

    def _started(self) -> None:
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="quick-intake", daemon=True)
                self._thread.start()

    def _taken(self) -> list[_Waiting]:
        """What waits, at least one: all of it, up to ``MAX_BATCH``."""
        taken = [self._queue.get()]
        while len(taken) < MAX_BATCH:
            try:
                taken.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return taken

    def _run(self) -> None:
        """Take what waits, store it (one commit a workspace's share), apply it, answer it;
        again."""
        while True:
            taken = self._taken()
            by_runtime: dict[int, list[_Waiting]] = {}
            for waiting in taken:
                by_runtime.setdefault(id(waiting.runtime), []).append(waiting)
            for share in by_runtime.values():
                try:
                    _record(share)
                except Exception as error:  # a dedup lookup failed: nothing is known stored
                    logger.error(
                        "could not take %d events, so they are refused: %s", len(share), error
                    )
                    for waiting in share:
                        waiting.status, waiting.action = STORE_FAILED, None
            _answer(taken)


def _record(share: list[_Waiting]) -> None:
    """One workspace's share of a batch: deduped, decided, stored in one commit on this thread
    (each event's records a part of its own, so one malformed event fails alone, and a
    refused one is answered ``STORE_FAILED``), then applied to the caches in order."""
    runtime = share[0].runtime
    engine = runtime.engine
    parts: list[list[StoreEvent]] = []
    owners: list[_Waiting] = []
    for waiting in share:
        event_id = waiting.event_id
        if waiting.event.get("type") != "message" and not runtime.first_delivery(
            event_id if isinstance(event_id, str) else None
        ):
            logger.info("dropped a retried delivery of %s", event_id)
            continue
        action = intake(waiting.event, engine.me)
        if engine.record is not None:
            try:
                stored = store_events(engine.record.team, action, waiting.event)
            except Exception as error:
                _malformed(error)
                continue
            if stored:
                parts.append(stored)
                owners.append(waiting)
        waiting.action = action
    if parts:
        assert engine.record is not None
        failures = engine.record.opened.write_parts(parts)
        for waiting, failed in zip(owners, failures, strict=True):
            if isinstance(failed, OSError):
                _refuse(waiting)
            elif failed is not None:
                _malformed(failed)
                waiting.action = None
    for waiting in share:
        if waiting.action is not None and waiting.status == 200:
            _apply(waiting)


def _answer(taken: list[_Waiting]) -> None:
    """Every answer of a batch, with one wake-up of each event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Waiting]] = {}
    for waiting in taken:
        by_loop.setdefault(waiting.answer.get_loop(), []).append(waiting)
    for loop, answered in by_loop.items():
        try:
            loop.call_soon_threadsafe(_answer_all, answered)
        except RuntimeError:  # that server stopped: nobody waits for these answers
            continue


def _apply(waiting: _Waiting) -> None:
    """Stored (or nothing to store): into the caches, and a reaction counted as a vote."""
    assert waiting.action is not None
    try:
        waiting.runtime.engine.apply(waiting.action, store=False)
        waiting.runtime.feedback_of(waiting.event)
    except Exception as error:  # stored already: acknowledged, the caches catch up on a read
        _malformed(error)


def _malformed(error: Exception) -> None:
    logger.warning(
        "an event failed (%s); acknowledged so Slack does not retry it forever",
        describe_error(error),
    )


def _refuse(waiting: _Waiting) -> None:
    waiting.status, waiting.action = STORE_FAILED, None
    if waiting.event.get("type") != "message":
        waiting.runtime.refused(waiting.event_id)  # Slack's retry of it must get through


def _answer_all(taken: list[_Waiting]) -> None:
    for waiting in taken:
        if not waiting.answer.done():  # the client may have gone (the request cancelled)
            waiting.answer.set_result(waiting.status)
