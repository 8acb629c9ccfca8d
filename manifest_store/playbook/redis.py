"""The playbooks in Redis, for replicas: a curation or a vote may run on any of them.

    chanctx:<team>:playbook:<channel>        the channel's lines (JSON, as in the local file)
    chanctx:<team>:playbook-gen:<channel>    bumped each time the lines are rewritten compactly
    chanctx:<team>:playbook-lock:<channel>   one writer at a time (expires after 10 s)

The lines are the local store's (``bullet``, ``drop``, ``alias``, ``use``, ``voted``): results,
folded in order. Each replica keeps the channel's state in memory and, before reading or
writing, folds the lines other replicas appended since (or reloads all of them when the
generation moved: another replica rewrote the list). A write holds the channel's lock, so two
replicas never apply deltas to different states; a lock whose holder died expires.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from chanctx.context.playbook import Similarity
from chanctx.manifest_store._errors import StoreUnavailable
from chanctx.manifest_store.playbook.local import (
    MAX_ACTIVE,
    MAX_KEPT,
    LocalPlaybookStore,
    _Channel,
    _fold,
    _state_lines,
)
from chanctx.manifest_store.redis_connection import guarded, namespace
from pydantic import ValidationError

__all__ = ["RedisPlaybookStore"]

logger = logging.getLogger("chanctx.playbook")

_LOCK_MS: Final = 10_000
_WAIT: Final = 15.0  # seconds a writer waits for the lock before giving up
# KEYS: the lock. ARGV: our token. Deletes the lock only if it is still ours.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS: the list, the generation. ARGV: the lines. The list replaced, the generation bumped.
_REPLACE = """
redis.call('DEL', KEYS[1])
for i = 1, #ARGV do redis.call('RPUSH', KEYS[1], ARGV[i]) end
return redis.call('INCR', KEYS[2])
"""


class RedisPlaybookStore(LocalPlaybookStore):
    def __init__(
        self,
        client: Any,
        team: str,
        *,
        max_active: int = MAX_ACTIVE,
        max_kept: int = MAX_KEPT,
        similar: Similarity | None = None,
    ) -> None:
        super().__init__(None, max_active=max_active, max_kept=max_kept, similar=similar)
        self._client = client
        self._prefix = namespace(team)
        self._release = client.register_script(_RELEASE)
        self._replace = client.register_script(_REPLACE)
        self._generations: dict[str, int] = {}

    def channels(self) -> list[str]:
        pattern = f"{self._prefix}playbook:*"
        with guarded("list the playbooks"):
            keys = list(self._client.scan_iter(match=pattern, count=500))
        found = {(k.decode() if isinstance(k, bytes) else str(k)).rsplit(":", 1)[-1] for k in keys}
        return sorted(found | set(super().channels()))

    # -- the hooks -------------------------------------------------------------------------

    @contextmanager
    def _exclusive(self, held: _Channel) -> Iterator[None]:
        channel = self._channel_of(held)
        lock, token = f"{self._prefix}playbook-lock:{channel}", uuid.uuid4().hex
        with held.lock:
            deadline = time.monotonic() + _WAIT
            with guarded("lock a playbook"):
                while not self._client.set(lock, token, nx=True, px=_LOCK_MS):
                    if time.monotonic() > deadline:
                        raise StoreUnavailable(f"the playbook of {channel} stayed locked")
                    time.sleep(0.01)
            try:
                self._catch_up(held)
                yield
            finally:
                with guarded("unlock a playbook"):
                    self._release(keys=[lock], args=[token])

    def _catch_up(self, held: _Channel) -> None:
        channel = self._channel_of(held)
        with guarded("read a playbook"):
            generation = int(self._client.get(f"{self._prefix}playbook-gen:{channel}") or 0)
            if generation != self._generations.get(channel, 0):
                self._generations[channel] = generation
                held.playbook, held.lines = self.new_playbook(), 0
                held.uses.clear()
                held.voted.clear()
                held.routes.clear()
            lines = self._client.lrange(f"{self._prefix}playbook:{channel}", held.lines, -1)
        if not lines:
            return
        bullets = {b.id: b for b in held.playbook.bullets}
        aliases = held.playbook.aliases
        for line in lines:
            held.lines += 1
            try:
                _fold(json.loads(line), bullets, aliases, held)
            except (ValueError, KeyError, TypeError, ValidationError):
                logger.warning("skipped an unreadable playbook line in %s", channel)
        held.playbook = self.new_playbook(bullets.values(), aliases)

    def _write(self, held: _Channel, entry: dict[str, Any]) -> None:
        channel = self._channel_of(held)
        with guarded("write a playbook line"):
            self._client.rpush(
                f"{self._prefix}playbook:{channel}",
                json.dumps(entry, sort_keys=True, ensure_ascii=False),
            )
        held.lines += 1

    def _rewrite(self, held: _Channel) -> None:
        channel = self._channel_of(held)
        lines = [json.dumps(e, sort_keys=True, ensure_ascii=False) for e in _state_lines(held)]
        keys = [f"{self._prefix}playbook:{channel}", f"{self._prefix}playbook-gen:{channel}"]
        with guarded("rewrite a playbook"):
            self._generations[channel] = int(self._replace(keys=keys, args=lines))
        held.lines = len(lines)

    def _load(self, held: _Channel) -> None:
        self._catch_up(held)

    def _channel_of(self, held: _Channel) -> str:
        return held.name
