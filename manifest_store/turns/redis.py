"""The turn queue and outbox in Redis, shared by every replica of one bot.

A question is queued with one atomic script (EVAL is all or nothing): the turn's hash and one
entry in a stream read by a consumer group. Each replica is a consumer; Redis hands every entry
to exactly one of them. A replica that dies leaves its entries pending; once they have been idle
for the lease, a live replica claims them (XAUTOCLAIM) and answers them. While a replica works on
a turn it renews the lease (XCLAIM to itself, resetting the idle time), so a slow answer is never
taken from a live replica.

Keys (``chanctx:<team>:`` first):

    turns                     stream; entry fields {turn: <turn id>}; group "answerers"
    turn:<turn id>            hash: payload, at, entry (stream id), state (queued | reply |
                              done), owner (the consumer answering it), parts (JSON: the
                              outbox), posted:<n> (Slack ts of part n)
    thread-lease:<ch>:<ts>    the replica answering in this thread now (one at a time)

Fencing: every write of an answer (the outbox, a posted part, done) checks that the hash still
names this replica as the owner; if the lease ran out and another replica took the turn, the
write raises TurnTakenOver and this replica stops before posting. A done turn keeps only its
state for ``remember_seconds`` (Slack's retries of the same question find it), then expires.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import redis
from chanctx.manifest_store._errors import TurnTakenOver
from chanctx.manifest_store.redis_connection import guarded, namespace
from chanctx.manifest_store.turns.base import OutboxEntry, PendingTurn

__all__ = ["GROUP", "QueuedTurn", "RedisTurnStore"]

logger = logging.getLogger("chanctx.turns")
GROUP: Final = "answerers"
_REMEMBER: Final = 900.0  # as the local journal: Slack's retry schedule with room

# KEYS: turn hash, stream. ARGV: turn id, payload JSON, event id, now.
_ENQUEUE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local entry = redis.call('XADD', KEYS[2], '*', 'turn', ARGV[1])
redis.call('HSET', KEYS[1], 'payload', ARGV[2], 'event', ARGV[3], 'at', ARGV[4],
           'entry', entry, 'state', 'queued')
return 1
"""

# KEYS: turn hash, stream. ARGV: group, entry id, me.
# A done or unknown turn is acknowledged and dropped; else this replica becomes its owner and
# gets {previous owner, field, value, ...}.
_TAKE: Final = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state or state == 'done' then
  redis.call('XACK', KEYS[2], ARGV[1], ARGV[2])
  redis.call('XDEL', KEYS[2], ARGV[2])
  return false
end
local previous = redis.call('HGET', KEYS[1], 'owner') or ''
redis.call('HSET', KEYS[1], 'owner', ARGV[3])
local all = redis.call('HGETALL', KEYS[1])
table.insert(all, 1, previous)
return all
"""

# Every answer write: KEYS: turn hash, stream. ARGV: me, op, group, args...
# Returns 'ok', 'gone' (no such turn: nothing to do) or 'lost:<owner>'.
_WRITE: Final = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 'gone' end
local owner = redis.call('HGET', KEYS[1], 'owner') or ''
if owner ~= ARGV[1] then return 'lost:' .. owner end
if redis.call('HGET', KEYS[1], 'state') == 'done' then return 'ok' end
local op = ARGV[2]
if op == 'reply' then
  if redis.call('HSETNX', KEYS[1], 'parts', ARGV[4]) == 1 then
    redis.call('HSET', KEYS[1], 'state', 'reply')
  end
elseif op == 'posted' then
  redis.call('HSETNX', KEYS[1], 'posted:' .. ARGV[4], ARGV[5])
elseif op == 'streaming' then
  redis.call('HSETNX', KEYS[1], 'streaming:' .. ARGV[4], ARGV[5])
elseif op == 'done' then
  local entry = redis.call('HGET', KEYS[1], 'entry')
  local event = redis.call('HGET', KEYS[1], 'event')
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'state', 'done', 'event', event or '', 'owner', ARGV[1])
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
  if entry then
    redis.call('XACK', KEYS[2], ARGV[3], entry)
    redis.call('XDEL', KEYS[2], entry)
  end
end
return 'ok'
"""

# KEYS: turn hashes...; ARGV: stream, group, me, entry ids... (same order). Renews the lease
# on every entry this replica still owns; returns how many.
_RENEW: Final = """
local renewed = 0
for i, key in ipairs(KEYS) do
  if redis.call('HGET', key, 'owner') == ARGV[3] then
    redis.call('XCLAIM', ARGV[1], ARGV[2], ARGV[3], 0, ARGV[3 + i], 'JUSTID')
    renewed = renewed + 1
  end
end
return renewed
"""

# KEYS: lease key. ARGV: me, milliseconds. Take (or keep) the lease; 1 if ours.
_LEASE: Final = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
"""

_UNLEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True)
class QueuedTurn:
    """A turn this replica took from the queue: what it needs to answer or finish it."""

    turn_id: str
    entry: str  # the stream entry id
    payload: dict[str, Any]
    parts: tuple[str, ...] | None = None  # the outbox, when an answer was written before
    posted: dict[int, str] = field(default_factory=dict)
    # Parts whose stream started (its message ts) and was not confirmed posted: finished or
    # replaced, never posted again.
    streaming: dict[int, str] = field(default_factory=dict)
    # Another replica held it before (it died, or its lease ran out): parts it may have
    # posted are looked for in the thread before posting.
    taken_over: bool = False


def _numbered(data: dict[str, str], prefix: str) -> dict[int, str]:
    """``{part: ts}`` from the hash fields ``<prefix><part>``."""
    return {
        int(name.removeprefix(prefix)): ts for name, ts in data.items() if name.startswith(prefix)
    }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisTurnStore:
    """TurnStore over Redis for one team; ``consumer`` names this replica in the group."""

    def __init__(
        self,
        client: Any,
        team: str,
        consumer: str,
        *,
        remember_seconds: float = _REMEMBER,
        clock: Any = time.time,
    ) -> None:
        self._client = client
        self.team = team
        self.consumer = consumer
        self._prefix = namespace(team)
        self.stream = self._prefix + "turns"
        self._remember = max(1, round(remember_seconds))
        self._clock = clock
        self._enqueue = client.register_script(_ENQUEUE)
        self._take = client.register_script(_TAKE)
        self._write = client.register_script(_WRITE)
        self._renew = client.register_script(_RENEW)
        self._lease = client.register_script(_LEASE)
        self._unlease = client.register_script(_UNLEASE)
        self._claim_cursor = "0-0"
        self._lock = threading.Lock()

    def _turn_key(self, turn_id: str) -> str:
        return f"{self._prefix}turn:{turn_id}"

    # -- TurnStore: the dispatch path -------------------------------------------------------

    def enqueue(self, turn_id: str, payload: dict[str, Any], event_id: str | None) -> bool:
        """Queue a turn durably (one script: the hash and the stream entry); False if known."""
        data = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        with guarded("queue a question"):
            added = self._enqueue(
                keys=[self._turn_key(turn_id), self.stream],
                args=[turn_id, data, event_id or "", repr(self._clock())],
            )
        return bool(added)

    def seen_event(self, event_id: str) -> bool:
        """True if an event with this id was recorded (the change feed's dedup keys)."""
        with guarded("look up an event id"):
            return bool(self._client.exists(f"{self._prefix}event:{event_id}"))

    # -- TurnStore: the answer worker (fenced by ownership) -------------------------------------

    def _owned(self, turn_id: str, op: str, *args: str) -> None:
        with guarded(f"record '{op}' for a turn"):
            answer = _text(
                self._write(
                    keys=[self._turn_key(turn_id), self.stream],
                    args=[self.consumer, op, GROUP, *args],
                )
            )
        if answer.startswith("lost:"):
            raise TurnTakenOver(turn_id, answer.removeprefix("lost:") or None)

    def write_reply(self, turn_id: str, parts: list[str]) -> None:
        self._owned(turn_id, "reply", json.dumps(parts, ensure_ascii=False))

    def mark_posted(self, turn_id: str, part: int, ts: str) -> None:
        self._owned(turn_id, "posted", str(part), ts)

    def mark_streaming(self, turn_id: str, part: int, ts: str) -> None:
        """A part's stream started as message ``ts`` (before any text): a replica that takes
        the turn over finishes or replaces that message instead of posting again."""
        self._owned(turn_id, "streaming", str(part), ts)

    def finish(self, turn_id: str) -> None:
        self._owned(turn_id, "done", str(self._remember))

    def pending(self) -> list[PendingTurn]:
        """Nothing: the consumer group hands unfinished turns out (``claim_stale``)."""
        return []

    def outbox(self) -> list[OutboxEntry]:
        """Nothing: a turn with an outbox is claimed like any other, parts included."""
        return []

    def close(self) -> None:
        """The client belongs to whoever made it."""

    # -- the consumer group ------------------------------------------------------------------

    def ensure_group(self) -> None:
        """The group exists (made with the stream if need be; Redis may have restarted empty)."""
        with guarded("create the answerers group"):
            try:
                self._client.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
            except redis.ResponseError as error:
                if "BUSYGROUP" not in str(error):
                    raise

    def read_new(self, count: int, block_ms: int) -> list[QueuedTurn]:
        """Entries no replica has been given yet, up to ``count``; waits up to ``block_ms``."""
        with guarded("read the turn queue"):
            try:
                answer = self._client.xreadgroup(
                    GROUP, self.consumer, {self.stream: ">"}, count=count, block=block_ms
                )
            except redis.ResponseError as error:
                if "NOGROUP" not in str(error):
                    raise
                self.ensure_group()  # Redis came back without its data
                return []
        rows = [row for _, entries in answer or [] for row in entries]
        return self._take_all(rows, taken_over=False)

    def claim_stale(self, lease_ms: int, count: int) -> list[QueuedTurn]:
        """Entries idle for more than the lease (their replica died or stalled), claimed here."""
        with self._lock:
            start = self._claim_cursor
        with guarded("claim stale turns"):
            answer = self._client.xautoclaim(
                self.stream, GROUP, self.consumer, lease_ms, start_id=start, count=count
            )
        cursor, rows = _text(answer[0]), answer[1]
        with self._lock:
            self._claim_cursor = cursor
        return self._take_all([row for row in rows if row], taken_over=True)

    def _take_all(self, rows: Sequence[Any], *, taken_over: bool) -> list[QueuedTurn]:
        taken: list[QueuedTurn] = []
        for entry_id, fields in rows:
            if not fields:
                continue  # deleted under us (finished elsewhere)
            entry = _text(entry_id)
            turn_id = _text(fields.get(b"turn", fields.get("turn", "")))
            with guarded("take a turn"):
                found = self._take(
                    keys=[self._turn_key(turn_id), self.stream],
                    args=[GROUP, entry, self.consumer],
                )
            if not found:
                continue
            previous, values = _text(found[0]), [_text(v) for v in found[1:]]
            data = dict(zip(values[::2], values[1::2], strict=True))
            posted = _numbered(data, "posted:")
            streaming = {
                p: ts for p, ts in _numbered(data, "streaming:").items() if p not in posted
            }
            taken.append(
                QueuedTurn(
                    turn_id=turn_id,
                    entry=entry,
                    payload=json.loads(data["payload"]),
                    parts=tuple(json.loads(data["parts"])) if "parts" in data else None,
                    posted=posted,
                    streaming=streaming,
                    taken_over=taken_over or previous not in ("", self.consumer),
                )
            )
        return taken

    def renew(self, turns: Sequence[tuple[str, str]]) -> int:
        """Reset the idle time of the entries this replica still owns ((turn id, entry id))."""
        if not turns:
            return 0
        with guarded("renew the leases of running turns"):
            return int(
                self._renew(
                    keys=[self._turn_key(turn_id) for turn_id, _ in turns],
                    args=[self.stream, GROUP, self.consumer, *(entry for _, entry in turns)],
                )
            )

    def release(self, turns: Sequence[tuple[str, str]], lease_ms: int) -> None:
        """Leaving with these turns unfinished: make them look idle for the whole lease, so
        another replica claims them at once instead of after it."""
        with guarded("hand back running turns"):
            for _, entry in turns:
                self._client.xclaim(
                    self.stream, GROUP, self.consumer, 0, [entry], idle=lease_ms, justid=True
                )

    def forget_idle_consumers(self, idle_ms: int) -> int:
        """Drop consumers (replicas gone) with nothing pending, idle longer than ``idle_ms``."""
        dropped = 0
        with guarded("tidy the answerers group"):
            for info in self._client.xinfo_consumers(self.stream, GROUP):
                name = _text(info["name"])
                if name != self.consumer and not info["pending"] and info["idle"] > idle_ms:
                    dropped += int(self._client.xgroup_delconsumer(self.stream, GROUP, name))
        return dropped

    # -- one answer per thread at a time, across replicas -----------------------------------

    def _lease_key(self, channel: str, thread_ts: str) -> str:
        return f"{self._prefix}thread-lease:{channel}:{thread_ts}"

    def lease_thread(self, channel: str, thread_ts: str, lease_ms: int) -> bool:
        """Take (or renew) this replica's lease on a thread; False while another holds it."""
        with guarded("lease a thread"):
            key = self._lease_key(channel, thread_ts)
            return bool(self._lease(keys=[key], args=[self.consumer, lease_ms]))

    def unlease_thread(self, channel: str, thread_ts: str) -> None:
        with guarded("release a thread"):
            self._unlease(keys=[self._lease_key(channel, thread_ts)], args=[self.consumer])

    # -- for status and tests ----------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        with guarded("count turns"):
            queued = int(self._client.xlen(self.stream))
            try:
                summary = self._client.xpending(self.stream, GROUP)
            except redis.ResponseError:
                return {"queued": queued, "pending": 0}
        return {"queued": queued, "pending": int(summary["pending"])}
