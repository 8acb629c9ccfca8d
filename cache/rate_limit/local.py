"""The Slack API rate limiter of one process: its buckets in memory.

Each budget is a token bucket (capacity ``rate`` calls, refilled at ``rate`` per minute), kept
in its GCRA form: one "theoretical arrival time" per bucket instead of a fractional token count,
so nothing accumulates float error and a 1/min bucket grants calls exactly 60 s apart. A call
takes from the workspace bucket and from its method's bucket together, or from neither.

``acquire`` (the "queue" policy) reserves the earliest slot and then sleeps until it: waiting
callers are served in the order they asked, and a sleep that does not move the clock (a fake
in tests, a virtual clock in replays) still ends.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Final

from chanctx.cache._clock import Clock
from chanctx.cache.rate_limit.base import (
    DEFAULT_PER_METHOD,
    RateLimited,
    check_minute,
    check_rate,
    check_retry_after,
)

__all__ = ["RateLimiter"]

_ALL: Final = "*"  # the key under which a workspace-wide penalty is kept


class _Bucket:
    """A token bucket of ``capacity`` tokens refilled at ``per_minute`` tokens a minute (GCRA)."""

    __slots__ = ("interval", "tat", "tolerance")

    def __init__(self, per_minute: float, minute: float = 60.0) -> None:
        self.interval = minute / per_minute  # seconds one token takes to refill
        # A full bucket lets max(1, rate) calls through at once; fewer than one would never allow one.
        self.tolerance = (max(per_minute, 1.0) - 1.0) * self.interval
        self.tat = -math.inf  # when the bucket would be full again ("theoretical arrival time")

    def earliest(self) -> float:
        return self.tat - self.tolerance

    def take(self, at: float) -> None:
        self.tat = max(self.tat, at) + self.interval


class RateLimiter:
    """Token buckets for Slack Web API calls: one for the workspace, one per listed method.

    ``calls_per_minute`` is the workspace budget (Slack's Tier 3 is 50+, so 40 leaves headroom
    for other clients of the same token); ``per_method`` maps method names to their own budget
    in calls per minute. ``minute``: how long a minute of these budgets lasts (60 s; shorter
    only against the fake Slack, whose minute is shortened alike). Thread-safe.
    """

    def __init__(
        self,
        *,
        calls_per_minute: float = 40,
        per_method: Mapping[str, float] | None = None,
        clock: Clock = time.monotonic,
        minute: float = 60.0,
    ) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        minute = check_minute(minute)
        self._workspace = _Bucket(check_rate("calls_per_minute", calls_per_minute), minute)
        rates = DEFAULT_PER_METHOD if per_method is None else per_method
        self._methods = {
            method: _Bucket(check_rate(f"per_method[{method!r}]", rate), minute)
            for method, rate in rates.items()
        }
        self._blocked_until: dict[str, float] = {}  # method (or "*") -> end of its 429 penalty

    @property
    def capacity(self) -> float:
        """How many calls the workspace bucket lets through at once."""
        return self._workspace.tolerance / self._workspace.interval + 1.0

    def _earliest(self, method: str) -> float:
        # Caller holds the lock.
        times = [self._workspace.earliest()]
        if method in self._methods:
            times.append(self._methods[method].earliest())
        times.append(self._blocked_until.get(method, -math.inf))
        times.append(self._blocked_until.get(_ALL, -math.inf))
        return max(times)

    def _take(self, method: str, at: float) -> None:
        self._workspace.take(at)
        if method in self._methods:
            self._methods[method].take(at)

    def wait_time(self, method: str) -> float:
        """Seconds until a call of ``method`` may be sent (0.0 if it may be sent now)."""
        with self._lock:
            return max(0.0, self._earliest(method) - self._clock())

    def try_acquire(self, method: str) -> bool:
        """Take a call of ``method`` now if every budget allows it; never waits."""
        with self._lock:
            now = self._clock()
            if self._earliest(method) > now:
                return False
            self._take(method, now)
            return True

    def acquire(
        self,
        method: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        """Wait (with ``sleep``) until a call of ``method`` may be sent, and take it.

        Raises RateLimited, without taking anything, if that would mean waiting more than
        ``max_wait`` seconds.
        """
        with self._lock:
            now = self._clock()
            at = max(now, self._earliest(method))
            if max_wait is not None and at - now > max_wait:
                raise RateLimited(method, at - now)
            # Reserve the slot before sleeping, so later callers queue behind this one.
            self._take(method, at)
        if at > now:
            sleep(at - now)

    def penalize(self, method: str, retry_after: float, *, all_methods: bool = False) -> None:
        """After a 429: no call of ``method`` (of any method if ``all_methods``) for ``retry_after`` s."""
        check_retry_after(retry_after)
        key = _ALL if all_methods else method
        with self._lock:
            until = self._clock() + retry_after
            self._blocked_until[key] = max(self._blocked_until.get(key, -math.inf), until)
