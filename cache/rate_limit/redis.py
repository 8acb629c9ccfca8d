"""The Slack rate limiter with its budget kept in Redis, shared by every replica of one bot.

Slack counts calls per workspace, not per process: two replicas with a local limiter each would
spend twice the allowance and meet 429s. This limiter keeps the same buckets as
:class:`RateLimiter` (GCRA: one "theoretical arrival time" per bucket, a workspace bucket plus
stricter per-method ones, 429 penalties) in Redis, and decides in one Lua script, so a decision
and its reservation are atomic across replicas. Time is Redis' own clock (``TIME``), so replicas
whose clocks disagree still share one schedule; tests pass a ``clock`` instead.

Keys (``chanctx:{team}:ratelimit:...``) expire once their bucket is full again, so an idle
workspace leaves nothing behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from chanctx.cache._clock import Clock
from chanctx.cache.rate_limit.base import (
    DEFAULT_PER_METHOD,
    RateLimited,
    check_minute,
    check_rate,
    check_retry_after,
)

__all__ = ["RedisRateLimiter"]

# KEYS: workspace bucket, method bucket ("" if none), method penalty, all-methods penalty.
# ARGV: mode ("peek" | "try" | "take"), now ("" = Redis TIME), max_wait ("" = none),
#       workspace interval, workspace tolerance, method interval ("" if none), method tolerance.
# Returns the seconds from now until the call's slot as a string (Lua numbers lose fractions);
# "try" takes only when that is 0; "take" takes the slot unless it is more than max_wait away,
# and then answers "over:<seconds>".
# Both scripts read "now" from ARGV[2]: the caller's clock, or Redis' own when it is empty.
_NOW: Final = """
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1e6
else
  now = tonumber(ARGV[2])
end
"""

_SCRIPT: Final = (
    _NOW
    + """local function tat(key)
  local v = redis.call('GET', key)
  if v then return tonumber(v) end
  return -math.huge
end
local ws_interval, ws_tol = tonumber(ARGV[4]), tonumber(ARGV[5])
local earliest = tat(KEYS[1]) - ws_tol
local has_method = KEYS[2] ~= ''
local m_interval, m_tol = 0, 0
if has_method then
  m_interval, m_tol = tonumber(ARGV[6]), tonumber(ARGV[7])
  earliest = math.max(earliest, tat(KEYS[2]) - m_tol)
end
earliest = math.max(earliest, tat(KEYS[3]), tat(KEYS[4]))
local at = math.max(now, earliest)
local wait = at - now
local mode = ARGV[1]
if mode == 'peek' or (mode == 'try' and wait > 0) then
  return tostring(wait)
end
if mode == 'take' and ARGV[3] ~= '' and wait > tonumber(ARGV[3]) then
  return 'over:' .. tostring(wait)
end
local function take(key, interval, tolerance)
  local next_tat = math.max(tat(key), at) + interval
  -- Expire once the bucket is full again: nothing of an idle workspace stays behind.
  local ttl_ms = math.ceil((next_tat - now) * 1000) + 1000
  redis.call('SET', key, string.format('%.6f', next_tat), 'PX', ttl_ms)
end
take(KEYS[1], ws_interval, ws_tol)
if has_method then take(KEYS[2], m_interval, m_tol) end
return tostring(wait)
"""
)

# ARGV: retry_after, now ("" = Redis TIME). Penalties only ever lengthen.
_PENALTY: Final = (
    _NOW
    + """
local untill = now + tonumber(ARGV[1])
local old = redis.call('GET', KEYS[1])
if old and tonumber(old) >= untill then return 0 end
redis.call('SET', KEYS[1], string.format('%.6f', untill), 'PX', math.ceil(tonumber(ARGV[1]) * 1000) + 1000)
return 1
"""
)


class _Rate:
    __slots__ = ("interval", "tolerance")

    def __init__(self, per_minute: float, minute: float = 60.0) -> None:
        self.interval = minute / per_minute
        self.tolerance = (max(per_minute, 1.0) - 1.0) * self.interval


class RedisRateLimiter:
    """:class:`RateLimiter`'s interface over buckets in Redis, one set per workspace (``team``).

    ``client`` is a ``redis.Redis``; ``clock`` (seconds) replaces Redis' clock in tests and
    replays. Calls that cannot reach Redis raise its ConnectionError: the caller decides
    whether to wait or to serve from its caches, exactly as for a rate limit.
    """

    def __init__(
        self,
        client: Any,
        team: str,
        *,
        calls_per_minute: float = 40,
        per_method: Mapping[str, float] | None = None,
        clock: Clock | None = None,
        minute: float = 60.0,
    ) -> None:
        if not team:
            raise ValueError("RedisRateLimiter needs the workspace id (team) its budget is for")
        self._client = client
        self._prefix = f"chanctx:{team}:ratelimit:"
        self._clock = clock
        minute = check_minute(minute)
        self._workspace = _Rate(check_rate("calls_per_minute", calls_per_minute), minute)
        rates = DEFAULT_PER_METHOD if per_method is None else per_method
        self._methods = {
            m: _Rate(check_rate(f"per_method[{m!r}]", r), minute) for m, r in rates.items()
        }
        self._script = client.register_script(_SCRIPT)
        self._penalty = client.register_script(_PENALTY)

    @property
    def capacity(self) -> float:
        """How many calls the workspace bucket lets through at once."""
        return self._workspace.tolerance / self._workspace.interval + 1.0

    def _now(self) -> str:
        return "" if self._clock is None else repr(self._clock())

    def _run(self, mode: str, method: str, max_wait: float | None = None) -> str:
        own = self._methods.get(method)
        keys = [
            self._prefix + "bucket:*",
            self._prefix + "bucket:" + method if own else "",
            self._prefix + "penalty:" + method,
            self._prefix + "penalty:*",
        ]
        args = [
            mode,
            self._now(),
            "" if max_wait is None else repr(max_wait),
            repr(self._workspace.interval),
            repr(self._workspace.tolerance),
            repr(own.interval) if own else "",
            repr(own.tolerance) if own else "",
        ]
        answer = self._script(keys=keys, args=args)
        return answer.decode() if isinstance(answer, bytes) else str(answer)

    def wait_time(self, method: str) -> float:
        """Seconds until a call of ``method`` may be sent (0.0 if it may be sent now)."""
        return max(0.0, float(self._run("peek", method)))

    def try_acquire(self, method: str) -> bool:
        """Take a call of ``method`` now if every budget allows it; never waits."""
        return float(self._run("try", method)) <= 0.0

    def acquire(
        self,
        method: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        """Reserve the earliest shared slot for ``method`` and sleep until it; RateLimited,
        taking nothing, when that is more than ``max_wait`` seconds away."""
        answer = self._run("take", method, max_wait)
        if answer.startswith("over:"):
            raise RateLimited(method, float(answer.removeprefix("over:")))
        wait = float(answer)
        if wait > 0:
            sleep(wait)

    def penalize(self, method: str, retry_after: float, *, all_methods: bool = False) -> None:
        """After a 429: no replica calls ``method`` (any method if ``all_methods``) for
        ``retry_after`` seconds."""
        check_retry_after(retry_after)
        key = self._prefix + "penalty:" + ("*" if all_methods else method)
        self._penalty(keys=[key], args=[repr(retry_after), self._now()])
