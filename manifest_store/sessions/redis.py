"""Session logs in Redis: one list per thread, so a thread's session resumes on any replica.

``chanctx:<team>:session:<channel>:<thread_ts>`` holds the thread's entries, one JSON string
each, appended with RPUSH: an append is atomic (no torn lines to repair) and, with Redis'
append-only file on, as durable as Redis is configured to be. A damaged entry is skipped with
one warning, as in the local log. Turns in one thread never run on two replicas at once (the
runtime holds a lease on the thread), so the only concurrent writer a log can meet is the next
turn on another replica; ``changed_elsewhere`` tells the holder of an in-memory copy to reload.

What Slack deletes leaves these lists too (``RedisSessionStore.redact``): each list holding an
erased text is rewritten whole in one transaction, and the team's redaction counter
(``chanctx:<team>:session-redactions``) moves, so every replica's in-memory copy reloads.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from chanctx.manifest_store._entries import Entry, parse_entry
from chanctx.manifest_store._keys import SessionKey
from chanctx.manifest_store.redaction import RedactionCount, Redactor
from chanctx.manifest_store.redis_connection import guarded, namespace
from pydantic import ValidationError
from redis.exceptions import WatchError

__all__ = ["RedisSessionLog", "RedisSessionStore"]

logger = logging.getLogger("chanctx.manifest_store")

# KEYS: the list. ARGV: the line, the length the appender knew (-1: unknown). A retry of an
# append that landed before its connection broke finds its own line last and adds nothing.
_APPEND = """
local n = redis.call('LLEN', KEYS[1])
if n > 0 and tonumber(ARGV[2]) == n - 1 and redis.call('LINDEX', KEYS[1], -1) == ARGV[1] then
  return n
end
return redis.call('RPUSH', KEYS[1], ARGV[1])
"""


class RedisSessionLog:
    def __init__(self, client: Any, key: str, redactions: str) -> None:
        self._client = client
        self.key = key
        self._redactions = redactions  # the team's counter of rewritten session lists
        self._append = client.register_script(_APPEND)
        self._lock = threading.Lock()
        # Entries in the list after our own last read or append; None: never looked.
        self._known: int | None = None
        self._seen_redactions: bytes | None = None  # the counter at our last read

    def append(self, entry: Entry) -> None:
        line = entry.model_dump_json()
        with self._lock, guarded("append to a session log"):
            known = -1 if self._known is None else self._known
            length = int(self._append(keys=[self.key], args=[line, known]))
            # Someone else appended since we last looked: the holder must reload.
            self._known = length if self._known in (None, length - 1) else -1

    def entries(self) -> list[Entry]:
        with self._lock, guarded("read a session log"):
            pipe = self._client.pipeline(transaction=True)
            pipe.lrange(self.key, 0, -1)
            pipe.get(self._redactions)
            raw, self._seen_redactions = pipe.execute()
            self._known = len(raw)
        result: list[Entry] = []
        for number, line in enumerate(raw, 1):
            try:
                result.append(parse_entry(line))
            except ValidationError as error:
                logger.warning("%s: entry %d skipped (%s)", self.key, number, error.errors()[0])
        return result

    def changed_elsewhere(self) -> bool:
        with self._lock, guarded("check a session log"):
            if self._known is None:
                return False
            pipe = self._client.pipeline(transaction=False)
            pipe.llen(self.key)
            pipe.get(self._redactions)
            length, redactions = pipe.execute()
            return int(length) != self._known or redactions != self._seen_redactions


class RedisSessionStore:
    """Every session of one team in Redis (``chanctx:<team>:session:*``)."""

    def __init__(self, client: Any, team: str) -> None:
        self._client = client
        self._prefix = namespace(team) + "session:"
        self._redactions = namespace(team) + "session-redactions"
        self.team = team

    def _key(self, key: SessionKey) -> str:
        if key.team != self.team:
            raise ValueError(f"session of team {key.team} asked of the store of {self.team}")
        return f"{self._prefix}{key.channel}:{key.thread_ts}"

    def open(self, key: SessionKey) -> RedisSessionLog:
        return RedisSessionLog(self._client, self._key(key), self._redactions)

    def exists(self, key: SessionKey) -> bool:
        with guarded("look up a session"):
            return bool(self._client.exists(self._key(key)))

    def forget(self, key: SessionKey) -> bool:
        with guarded("delete a session"):
            return bool(self._client.delete(self._key(key)))

    def keys(self) -> list[SessionKey]:
        found: list[SessionKey] = []
        with guarded("list sessions"):
            for raw in self._client.scan_iter(match=self._prefix + "*", count=500):
                name = raw.decode() if isinstance(raw, bytes) else str(raw)
                channel, _, thread_ts = name.removeprefix(self._prefix).partition(":")
                try:
                    found.append(SessionKey(self.team, channel, thread_ts))
                except ValueError:
                    continue
        return sorted(found)

    def redact(self, redactor: Redactor) -> RedactionCount:
        """Replace erased Slack text in every session list of the team; ``files`` counts the
        lists rewritten."""
        count = RedactionCount()
        for key in self.keys():
            changed = self._redact_list(self._key(key), redactor)
            if changed:
                count.add(RedactionCount(files=1, lines=changed))
        return count

    def _redact_list(self, name: str, redactor: Redactor) -> int:
        """One list rewritten in a transaction that fails (and is tried again) if a turn
        appends meanwhile, so no append is lost; how many entries changed."""
        with guarded("redact a session log"):
            while True:
                with self._client.pipeline(transaction=True) as pipe:
                    try:
                        pipe.watch(name)
                        raw = [bytes(line) for line in pipe.lrange(name, 0, -1)]
                        new = [redactor.line(line) for line in raw]
                        changed = sum(1 for old, line in zip(raw, new, strict=True) if old != line)
                        if not changed:
                            return 0
                        pipe.multi()
                        pipe.delete(name)
                        pipe.rpush(name, *new)
                        pipe.incr(self._redactions)
                        pipe.execute()
                        return changed
                    except WatchError:
                        continue
