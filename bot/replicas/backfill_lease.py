"""Which replica runs a workspace's backfill: the one holding ``chanctx:<team>:backfill``.

Replicas on one Redis share the workspace's Slack budget, so two of them paging the same
history would spend it twice. One key per workspace, set with a lease (SET NX PX) and renewed
by its holder at every round of its backfill: while it lives, the other replicas' backfills
wait; once it is gone (the replica stopped, was killed, or lost Redis), the next replica that
looks takes it and goes on from the cursors its own store holds (the holder's pages reach every
replica's store through the change stream, with their cursors).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Final

import redis
from chanctx.manifest_store import namespace

__all__ = ["BackfillLease"]

logger = logging.getLogger("chanctx.backfill")

# KEYS: the lease. ARGV: this replica, lease ms. 1 when this replica holds it (taken or renewed).
_HOLD: Final = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2])) return 1 end
if not holder then redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2])) return 1 end
return 0
"""
# KEYS: the lease. ARGV: this replica. Deleted only by its holder.
_RELEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class BackfillLease:
    """The backfill's gate on a replica: ``held()`` takes or renews the lease."""

    def __init__(self, client: Any, team: str, replica: str, *, seconds: float = 60.0) -> None:
        self.key = namespace(team) + "backfill"
        self.replica = replica
        self._ms = max(1, round(seconds * 1000))
        self._hold = client.register_script(_HOLD)
        self._release = client.register_script(_RELEASE)
        self._held = False

    def held(self) -> bool:
        """True if this replica may run the backfill now (it holds the lease); False while
        another does, or when Redis cannot say (nobody pages twice during an outage)."""
        try:
            held = bool(int(self._hold(keys=[self.key], args=[self.replica, self._ms])))
        except redis.RedisError as error:
            logger.info("backfill waits: Redis cannot say who runs it (%s)", error)
            held = False
        if held != self._held:
            logger.info("backfill %s on this replica", "runs" if held else "runs elsewhere")
            self._held = held
        return held

    def release(self) -> None:
        """At stop: another replica may take the backfill at once, not after the lease."""
        with contextlib.suppress(redis.RedisError):  # else it expires with its lease
            self._release(keys=[self.key], args=[self.replica])
        self._held = False
