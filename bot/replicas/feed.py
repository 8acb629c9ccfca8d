"""The change stream: every replica's channel state fed from one Redis stream.

Each replica receives only some of Slack's events. The one that receives an event records what it
means in ``chanctx:<team>:changes`` with one script that also keeps the event id for ten minutes
(``chanctx:<team>:event:<id>``, SET NX): an event delivered twice, to the same replica or to
another, is recorded once. Every replica reads the stream in order into its own in-memory
history, thread caches and search index, so a mention costs no Slack call on whichever replica
gets it. What a replica fetches from Slack (a channel's recent history, a thread, a name) goes
into the stream too, so no other replica fetches it again.

The channel store: each replica keeps its own (SQLite in its data dir), written from the stream
as it is applied, so a restart finds there what the stream has since trimmed; or all share one
(``--database-url``, PostgreSQL), which the replica that receives an event writes before it
records it in the stream (and so before the ack), and the stream only feeds the others' caches.

Before an answer is built the replica reads the stream up to its end (``catch_up``): the context
then holds every change recorded before the question was queued, as one process would. A replica
that starts (or restarts) reads the stream from its start; the stream keeps the last
``retention`` changes (MAXLEN ~), which bounds both Redis' memory and how far back a late replica
can catch up without asking Slack.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import redis
from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.replicas.changes import (
    apply_change,
    backfill_fill,
    encode_action,
    encode_stored,
    fill,
    message_data,
    thread_fill,
)
from chanctx.bot.slack.intake import intake
from chanctx.bot.stores.redis_link import BLOCK_MS, RedisLink
from chanctx.cache.channel_store import StoreEvent
from chanctx.context import Message
from chanctx.manifest_store import StoreUnavailable, guarded, is_outage, namespace

__all__ = ["DEDUP_SECONDS", "ChangeFeed"]

logger = logging.getLogger("chanctx.changes")
DEDUP_SECONDS: Final = 600  # Slack retries within ~5 minutes; twice that, as one process does
_BATCH: Final = 500

# KEYS: event key ("" when the event has no id), stream.
# ARGV: dedup seconds, change JSON ("" when the event changes nothing), replica, max length.
# 0: a delivery already recorded; else the entry id (or "1" for an event with nothing to add).
_PUBLISH: Final = """
if KEYS[1] ~= '' then
  if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[1])) then return 0 end
end
if ARGV[2] == '' then return '1' end
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', tonumber(ARGV[4]), '*', 'c', ARGV[2], 'by', ARGV[3])
"""


def _id(entry: str) -> tuple[int, int]:
    ms, _, seq = entry.partition("-")
    return int(ms), int(seq or 0)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class ChangeFeed:
    """Publishes this replica's changes and applies everyone's to ``engine``, in stream order.

    Also the engine's ``learned`` sink (what it fetched from Slack goes to the stream)."""

    def __init__(
        self,
        link: RedisLink,
        engine: ContextEngine,
        team: str,
        replica: str,
        *,
        retention: int,
        shared: bool = False,
    ) -> None:
        self._link = link
        self._engine = engine
        self._prefix = namespace(team)
        self.team = team
        self.stream = self._prefix + "changes"
        self.replica = replica
        self.retention = retention
        self.shared = shared  # one channel store for every replica (PostgreSQL)
        self._publish = link.client.register_script(_PUBLISH)
        self._apply_lock = threading.Lock()
        self._last = "0-0"
        self._synced = threading.Event()  # read to the end at least once since start
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.applied = 0
        self.skipped = 0
        self._stalled = False  # this replica's own store refused an entry: retried shortly
        self._waiting = ""  # the entry the store refused last (logged once)

    # -- the dispatch path ------------------------------------------------------------------

    def publish(self, event: Mapping[str, Any], event_id: str | None) -> bool:
        """Record an event: False if this delivery was recorded before (a retry, here or on
        another replica). Raises StoreUnavailable (an OSError: the event is refused, and Slack
        retries it) when Redis cannot take it."""
        if not self._link.healthy:
            raise StoreUnavailable("Redis is unavailable: the event is refused so Slack retries")
        action = intake(event, self._engine.me)
        if self.shared and self._engine.record is not None:
            # In the shared store before the stream: once an entry is there, every replica
            # may act on it. An OSError refuses the event; a retry writes it again, harmlessly.
            self._engine.record.record(action, event)
        change = encode_action(action) or encode_stored(self.team, action, event) or ""
        key = f"{self._prefix}event:{event_id}" if event_id else ""
        try:
            with guarded("record an event"):
                answer = self._publish(
                    keys=[key, self.stream],
                    args=[DEDUP_SECONDS, change, self.replica, self.retention],
                )
        except StoreUnavailable as error:
            self._link.failed(error.__cause__ or error)
            raise
        return _text(answer) != "0"

    # -- Learned: what the engine fetched from Slack ------------------------------------------

    def _tell(self, change: str) -> None:
        try:
            with guarded("share what was fetched"):
                self._link.client.xadd(
                    self.stream,
                    {"c": change, "by": self.replica},
                    maxlen=self.retention,
                    approximate=True,
                )
        except StoreUnavailable as error:
            # Only an economy is lost: another replica will ask Slack itself.
            self._link.failed(error.__cause__ or error)
            logger.warning("could not share a Slack fetch with the other replicas: %s", error)

    def warmed(self, channel: str, messages: Sequence[Message]) -> None:
        self._tell(fill("warm", c=channel, m=[message_data(m) for m in messages]))

    def fetched(self, messages: Sequence[Message]) -> None:
        self._tell(fill("msgs", m=[message_data(m) for m in messages]))

    def thread(
        self,
        channel: str,
        root_ts: str,
        messages: Sequence[Message],
        *,
        complete: bool,
        partial: tuple[str | None, str | None] | None,
    ) -> None:
        self._tell(thread_fill(channel, root_ts, messages, complete=complete, partial=partial))

    def named(self, kind: str, key: str, name: str) -> None:
        self._tell(fill("name", t=kind, id=key, v=name))

    def backfilled(self, events: Sequence[StoreEvent]) -> None:
        """One write of the backfill (on the replica holding it), for the others' stores."""
        self._tell(backfill_fill(events))

    # -- reading the stream -----------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """Read to the end of the stream at least once since this replica started."""
        return self._synced.is_set()

    @property
    def last(self) -> str:
        return self._last

    def catch_up(self) -> int:
        """Apply every change recorded so far; how many. Raises StoreUnavailable."""
        total = 0
        with self._apply_lock:
            while True:
                with guarded("read the change stream"):
                    rows = self._link.client.xrange(
                        self.stream, min="(" + self._last, max="+", count=_BATCH
                    )
                total += self._apply(rows)
                if len(rows) < _BATCH or self._stalled:
                    break
        self._synced.set()
        return total

    def _apply(self, rows: Sequence[Any]) -> int:
        """Apply entries newer than the last applied (caller holds the apply lock). An entry
        this replica's own store cannot take stops the batch before it: it is applied again
        on the next read, so the store misses nothing the stream said."""
        done = 0
        self._stalled = False
        for entry_id, fields in rows:
            entry = _text(entry_id)
            if _id(entry) <= _id(self._last):
                continue
            raw = fields.get(b"c", fields.get("c"))
            mine = _text(fields.get(b"by", fields.get("by", b""))) == self.replica
            try:
                apply_change(self._engine, raw, mine=mine, shared=self.shared)
            except (ValueError, KeyError, TypeError) as error:
                self._last = entry
                self.skipped += 1
                logger.warning("change %s skipped: %s", entry, error)
                continue
            except OSError as error:
                self._stalled = True
                if self._waiting != entry:  # said once, not at every retry
                    self._waiting = entry
                    logger.warning(
                        "change %s waits: the channel store refused it (%s)", entry, error
                    )
                break
            except Exception:  # a bug must not hold the stream: this entry alone is lost
                self._last = entry
                self.skipped += 1
                logger.exception("change %s skipped", entry)
                continue
            self._last = entry
            done += 1
        self.applied += done
        return done

    def gap(self) -> bool:
        """True if changes this replica never read were trimmed away (it was cut off from
        Redis longer than the retention lasts): its history may miss messages."""
        if self._last == "0-0":
            return False  # a fresh start reads what is kept; older history was never ours
        with guarded("look at the change stream"):
            info = self._link.client.xinfo_stream(self.stream)
        trimmed = _text(info.get("max-deleted-entry-id", "0-0"))
        return _id(trimmed) > _id(self._last)

    def start(self) -> None:
        self._link.on_recover(self._after_outage)
        self._thread = threading.Thread(target=self._tail, name="chanctx-changes", daemon=True)
        self._thread.start()

    def _after_outage(self) -> None:
        if self.gap():
            logger.warning(
                "the change stream was trimmed past what this replica had read: channels are "
                "loaded from Slack again on their next mention"
            )
            self._engine.forget_warmth()

    def _tail(self) -> None:
        """Follow the stream: first everything kept, then each change as it is recorded."""
        while not self._stop.is_set():
            if not self._link.healthy:
                self._stop.wait(0.2)
                continue
            try:
                if not self.synced:
                    self.catch_up()
                    continue
                with guarded("follow the change stream"):
                    answer = self._link.blocking.xread(
                        {self.stream: self._last}, count=_BATCH, block=BLOCK_MS
                    )
                with self._apply_lock:
                    for _, rows in answer or []:
                        self._apply(rows)
                if self._stalled:
                    self._stop.wait(0.5)
            except (StoreUnavailable, redis.RedisError) as error:
                if not is_outage(error):
                    logger.exception("reading the change stream failed")
                self._link.failed(error.__cause__ or error)
                self._stop.wait(0.2)
            except Exception:  # a bug must not stop the replica from following the stream
                logger.exception("applying the change stream failed")
                time.sleep(0.2)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=BLOCK_MS / 1000 + 3)
