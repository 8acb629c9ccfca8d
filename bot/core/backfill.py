"""Background backfill: a channel's older history paged into the store within Slack's tier.

For every channel the store knows whose stored history does not reach back to the goal
(``--backfill recent``: ``--backfill-days`` back; ``all``: the channel's beginning), one
background thread pages ``conversations.history`` backwards from the oldest stored page, and
``conversations.replies`` for each thread of a page whose replies are not all stored. A page,
its threads' replies and the moved cursor go to the store in one write, so a kill loses at most
the page in flight, and a restart asks Slack for exactly the next one.

Answers go first: the fetcher given here uses the rate limiter's background lane
(``PriorityLimiter.background``), which never waits in line and yields to any answer that
asked for the same method; a call it may not make now is retried when the lane says. Channels
are served round-robin, one call each, so one long channel does not starve the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from chanctx.bot.core.backfill_plan import (
    GAP,
    HISTORY,
    BackfillSettings,
    gap_after,
    goal_ts,
    pending,
)
from chanctx.bot.core.channel_record import ChannelRecord
from chanctx.bot.slack.slack_api import SlackFetcher
from chanctx.bot.slack.web_calls import SlackUnavailable
from chanctx.cache import RateLimited, ts_key
from chanctx.cache.channel_store import BackfillCursor, CursorSaved, MessagePosted, StoreEvent
from chanctx.context import Message

__all__ = ["Backfill", "BackfillGate"]

logger = logging.getLogger("chanctx.backfill")
_UNAVAILABLE_PAUSE = 5.0  # seconds before a channel is tried again after Slack kept failing
# A pass under the limited tier lasts hours: the log says how far it got this often.
_PROGRESS_EVERY = 300.0
_SWEEP = 1_000  # newest messages of the first load's page checked for threads to read
# users.conversations again this often (channels joined since; events also tell of them).
_LIST_EVERY = 3_600.0


class BackfillGate(Protocol):
    """Whether this process may run the backfill now (replicas: one of them at a time)."""

    def held(self) -> bool: ...
    def release(self) -> None: ...


@dataclass
class _Job:
    """One channel's page in flight: fetched, its threads being read, not yet stored."""

    channel: str
    goal: str | None
    page: list[Message] | None = None
    more: bool = False
    threads: list[str] = field(default_factory=list)  # roots whose replies are still to read
    replies: dict[str, Message] = field(default_factory=dict)
    reply_cursor: str = ""
    swept: bool = False  # the first load's page was checked for threads to read
    swept_bare: bool = False  # ... when the channel had no cursor yet (no page to check)
    gap: str | None = None  # the page is of the gap above an imported range, which ends here
    loaded: bool = False  # the engine's first load was asked for the gap's newest page


class Backfill:
    """Pages older history of one workspace's channels into its store (``start`` / ``stop``)."""

    def __init__(
        self,
        record: ChannelRecord,
        slack: SlackFetcher,
        settings: BackfillSettings,
        *,
        clock: Callable[[], float] = time.time,
        first_load: Callable[[str], None] | None = None,
        progress_every: float = _PROGRESS_EVERY,
        gate: BackfillGate | None = None,
        share: Callable[[Sequence[StoreEvent]], None] | None = None,
    ) -> None:
        """``first_load``: the engine's load of a channel's newest page (``warm_channel``),
        used for a channel never loaded, so that an answer's load and the backfill's never
        both ask Slack for the same page (None: the backfill reads it itself).
        ``progress_every``: seconds between the log lines saying how far the backfill got.
        ``gate``: asked every round; while it is not held, nothing is fetched (replicas: one
        runs the backfill). ``share``: told every write (pages, cursors), for the other
        replicas' stores."""
        self.record = record
        self._gate = gate
        self._share = share
        self._first_load = first_load
        self.slack = slack
        self.settings = settings
        self._clock = clock
        self._jobs: dict[str, _Job] = {}
        self._refused: set[str] = set()  # channels Slack will not page for us (not_in_channel)
        self._listed: set[str] = set()  # the conversations users.conversations says we are in
        self._list_cursor = ""  # the listing's next page, while it runs
        self._list_due = -float("inf")  # when the listing runs (again)
        self._looked = -float("inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.pages = 0  # pages stored since the start
        self.messages = 0  # messages (replies included) in them
        self._progress_every = progress_every
        self._told = time.monotonic()  # when the log last said how far the backfill got

    @property
    def pending(self) -> list[str]:
        """The channels with a pass under way (as of the last look at the store)."""
        return list(self._jobs)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        if self.settings.mode == "off" or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="chanctx-backfill", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the call in flight; a page not yet stored is read again next start."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._gate is not None:
            self._gate.release()

    def _run(self) -> None:
        logger.info("backfill: %s, pages of %d", self.settings.mode, self.settings.page)
        while not self._stop.is_set():
            try:
                wait = self.step()
            except Exception:  # never take the bot down; try again after a pause
                logger.exception("backfill step failed")
                wait = self.settings.idle_seconds
            if wait > 0:
                self._stop.wait(wait)

    # -- one round -----------------------------------------------------------------------------

    def step(self) -> float:
        """One call for each channel whose turn it is, if the lane allows; seconds to wait."""
        if self._gate is not None and not self._gate.held():
            self._jobs.clear()  # pages in flight are read again by whoever holds the gate
            self._looked = self._list_due = -float("inf")
            return self.settings.idle_seconds
        self._look_for_channels()
        if not self._jobs:
            return self.settings.idle_seconds
        wait = self.settings.idle_seconds
        for job in list(self._jobs.values()):
            if self._stop.is_set():
                return 0.0
            try:
                if self._advance(job):
                    wait = 0.0
            except RateLimited as limited:
                wait = min(wait, max(limited.retry_after, 0.01))
            except SlackUnavailable as error:
                logger.info("backfill of %s paused: %s", job.channel, error)
                wait = min(wait, _UNAVAILABLE_PAUSE)
            except OSError as error:  # the store refused the page (full disk): read it again later
                logger.warning("backfill of %s paused: %s", job.channel, error)
                job.page, job.replies, job.threads = None, {}, []
                wait = min(wait, self.settings.idle_seconds)
        return wait

    def _look_for_channels(self) -> None:
        """Channels the bot is in (``users.conversations``) or the store knows (heard live,
        warmed, imported) whose history is short."""
        now = time.monotonic()
        if self._jobs and now - self._looked < self.settings.idle_seconds:
            return
        self._looked = now
        self._list_member_channels(now)
        team, store = self.record.team, self.record.store
        goal = goal_ts(self.settings, self._clock())
        known = {key.channel for key in store.channels(team)}
        for channel in sorted(known | self._listed):
            if channel in self._jobs or channel in self._refused:
                continue
            cursor = store.cursor(team, channel, HISTORY)
            if pending(cursor, goal) or gap_after(cursor) is not None:
                self._jobs[channel] = _Job(channel, goal)

    def _write(self, events: list[StoreEvent]) -> None:
        """Into this process's store, then to the other replicas' (when shared)."""
        self.record.write(events)
        if self._share is not None and events:
            self._share(events)

    def _list_member_channels(self, now: float) -> None:
        """Page ``users.conversations`` (through the background lane, like every call here):
        a page the lane refuses now is asked again at the next look, from the same cursor."""
        if now < self._list_due:
            return
        try:
            while True:
                got = self.slack.member_channels(self._list_cursor)
                if got is None:  # refused (a missing scope): the store's channels still count
                    logger.info("backfill: users.conversations refused; channels seen only")
                    break
                listed, self._list_cursor = got
                self._listed.update(listed)
                if not self._list_cursor:
                    break
        except RateLimited:
            return
        except SlackUnavailable as error:
            logger.info("backfill: listing channels paused: %s", error)
            self._list_due = now + _UNAVAILABLE_PAUSE
            return
        self._list_cursor, self._list_due = "", now + _LIST_EVERY

    def _advance(self, job: _Job) -> bool:
        """The job's next call (a history page, a replies page) or its write; True if done."""
        if not job.swept:
            job.swept = True
            job.swept_bare = (
                self.record.store.cursor(self.record.team, job.channel, HISTORY) is None
            )
            job.threads = self._first_page_threads(job.channel)
            return False
        if job.threads:
            return self._read_replies(job)
        if job.page is None and job.replies:  # the first page's threads: no cursor moves
            self._write([MessagePosted(self.record.team, m) for m in job.replies.values()])
            job.replies = {}
            return True
        if job.page is None:
            return self._read_page(job)
        self._store(job)
        return True

    def _first_page_threads(self, channel: str) -> list[str]:
        """Threads of the page the first load stored (the newest, read by an answer's load,
        which reads no replies) whose replies are not all stored."""
        team, store = self.record.team, self.record.store
        cursor = store.cursor(team, channel, HISTORY)
        if cursor is None or cursor.oldest_ts is None:
            return []  # the backfill reads the newest page itself, threads included
        gap = store.cursor(team, channel, GAP) if gap_after(cursor) else None
        if gap is not None:  # the first load read the gap's newest page
            cursor = gap
        # The newest page before the load's time: an imported range below it came with its
        # threads (a sweep of it all would cost a store read per thread for nothing).
        loaded = store.messages(
            team,
            channel,
            oldest=cursor.oldest_ts,
            latest=f"{cursor.updated:.6f}",
            scope="timeline",
            limit=_SWEEP,
        )
        return self._missing_replies(channel, loaded)

    def _missing_replies(self, channel: str, page: list[Message]) -> list[str]:
        team, store = self.record.team, self.record.store
        return [
            m.ts
            for m in page
            if m.reply_count > 0
            and m.thread_ts == m.ts
            and len(store.replies(team, channel, m.ts)) < m.reply_count
        ]

    def _read_page(self, job: _Job) -> bool:
        team, store, channel = self.record.team, self.record.store, job.channel
        cursor = store.cursor(team, channel, HISTORY)
        if cursor is not None and cursor.newest_ts is not None:
            return self._read_gap(job, cursor.newest_ts)
        if cursor is not None and job.swept_bare:
            # An answer's first load stored the newest page since the sweep found none (a
            # channel listed before any event of it): read that page's threads first.
            job.swept, job.swept_bare = False, False
            return False
        if not pending(cursor, job.goal):
            del self._jobs[channel]
            return False
        if cursor is None and self._first_load is not None:
            self._first_load(channel)  # its cursor is stored with the page; go on from it
            job.swept = False  # and read that page's threads
            return False
        params: dict[str, object] = {"channel": channel, "limit": self.settings.page}
        if cursor is not None and cursor.oldest_ts is not None:
            params["latest"] = cursor.oldest_ts  # exclusive: the next older page
        if job.goal is not None:
            params["oldest"] = job.goal
        return self._read_history(job, params)

    def _read_history(self, job: _Job, params: dict[str, object]) -> bool:
        """One ``conversations.history`` page into ``job``; False when Slack refused the
        channel's history (the channel is then left alone until the next start)."""
        channel = job.channel
        got = self.slack.read_page("conversations.history", dict(params), channel)
        if got is None:
            logger.info("backfill of %s stopped: Slack refused its history", channel)
            self._refused.add(channel)
            del self._jobs[channel]
            return False
        job.page, more = got
        job.more = bool(more)
        job.threads = self._missing_replies(channel, job.page)
        return True

    def _read_gap(self, job: _Job, end: str) -> bool:
        """The next page of what Slack holds since an import (newer than ``end``, the
        imported range's newest), read downwards from the present."""
        team, store, channel = self.record.team, self.record.store, job.channel
        gap = store.cursor(team, channel, GAP)
        if gap is None and self._first_load is not None and not job.loaded:
            job.loaded = True  # the engine reads the gap's newest page, as an answer would
            self._first_load(channel)
            job.swept = False
            return False
        params: dict[str, object] = {"channel": channel, "limit": self.settings.page}
        params["oldest"] = end  # exclusive: nothing of the imported range is read again
        if gap is not None and gap.oldest_ts is not None:
            if ts_key(gap.oldest_ts) <= ts_key(end):  # an import since closed the gap
                self._close_gap(job, [], end)
                return True
            params["latest"] = gap.oldest_ts
        if not self._read_history(job, params):
            return False
        job.gap = end
        return True

    def _close_gap(self, job: _Job, events: list[StoreEvent], end: str) -> None:
        """The gap's last page with the cursor that says the channel is held up to now."""
        team, store = self.record.team, self.record.store
        held = store.cursor(team, job.channel, HISTORY)
        if held is not None and held.newest_ts == end:
            moved = held.model_copy(update={"newest_ts": None, "updated": time.time()})
            events.append(CursorSaved(team, job.channel, HISTORY, moved))
        self._write(events)
        logger.info("backfill of %s: read what Slack holds since its import", job.channel)

    def _read_replies(self, job: _Job) -> bool:
        root = job.threads[0]
        params: dict[str, object] = {
            "channel": job.channel,
            "ts": root,
            "limit": self.settings.page,
        }
        if job.reply_cursor:
            params["cursor"] = job.reply_cursor
        got = self.slack.read_page("conversations.replies", dict(params), job.channel)
        more = ""
        if got is not None:
            replies, more = got
            job.replies.update((m.ts, m) for m in replies if m.ts != root)
        if more:
            job.reply_cursor = more
        else:
            job.threads.pop(0)
            job.reply_cursor = ""
        return True

    def _tell_progress(self, channel: str, oldest: str | None) -> None:
        if time.monotonic() - self._told < self._progress_every:
            return
        self._told = time.monotonic()
        logger.info(
            "backfill: %d pages, %d messages stored since the start; %s back to ts %s, %d "
            "channel(s) pending (chanctx store stats shows each)",
            self.pages, self.messages, channel, oldest or "?", len(self._jobs),
        )  # fmt: skip

    def _store(self, job: _Job) -> None:
        """The page, its replies and the cursor moved past it: one write."""
        page = job.page or []
        team = self.record.team
        if job.gap is not None:
            self._store_gap(job, page, job.gap)
            return
        oldest = min((m.ts for m in page), key=ts_key, default=None)
        done = not job.more
        if done and job.goal is not None:
            oldest = job.goal  # everything since the goal is stored
        elif oldest is None:
            cursor = self.record.store.cursor(team, job.channel, HISTORY)
            oldest = cursor.oldest_ts if cursor is not None else None
        moved = BackfillCursor(
            oldest_ts=oldest,
            complete=done and job.goal is None,
            updated=time.time(),
            goal_ts=job.goal,
        )
        events: list[StoreEvent] = [
            MessagePosted(team, m) for m in [*page, *job.replies.values()] if not m.deleted
        ]
        events.append(CursorSaved(team, job.channel, HISTORY, moved))
        self._write(events)
        self.pages += 1
        self.messages += len(events) - 1
        job.page, job.replies, job.more = None, {}, False
        self._tell_progress(job.channel, oldest)
        if done:
            logger.info("backfill of %s reached %s", job.channel, job.goal or "its beginning")
            del self._jobs[job.channel]

    def _store_gap(self, job: _Job, page: list[Message], end: str) -> None:
        team = self.record.team
        events: list[StoreEvent] = [
            MessagePosted(team, m) for m in [*page, *job.replies.values()] if not m.deleted
        ]
        stored = len(events)
        if job.more and page:
            oldest = min((m.ts for m in page), key=ts_key)
            moved = BackfillCursor(oldest_ts=oldest, goal_ts=end, updated=time.time())
            events.append(CursorSaved(team, job.channel, GAP, moved))
            self._write(events)
        else:
            self._close_gap(job, events, end)
        self.pages += 1
        self.messages += stored
        job.page, job.replies, job.more, job.gap = None, {}, False, None
