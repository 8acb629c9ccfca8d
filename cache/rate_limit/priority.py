"""Answers first: a background lane on the rate limiter for work nobody is waiting for.

The backfill of a channel's older history may only use what answers leave of Slack's budget.
``PriorityLimiter`` wraps the process's limiter (local or Redis): answers use it as before (it
is a ``Limiter``), and ``background`` is a second ``Limiter`` over the same budgets with three
rules of its own:

* it never waits in line: a call is taken only if it may go now (``try_acquire``), so it never
  holds a slot an answer could have had;
* it keeps to a share of each method's budget (80% by default), evenly spaced: the bucket
  refills faster than the background drains it, so a budget of more than one call (Tier 3) is
  always close to full when an answer comes;
* it yields: for one refill interval after an answer asked for a method, and while an answer
  waits for one, the background takes none of it (under a budget of one call a minute this
  is what keeps the next minute for the answer's next page).

A 429 from Slack penalises both lanes: Slack's limit is one budget.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Final

from chanctx.cache._clock import Clock
from chanctx.cache.rate_limit.base import Limiter, RateLimited, check_minute, check_rate

__all__ = ["BACKGROUND_SHARE", "PriorityLimiter"]

BACKGROUND_SHARE: Final = 0.8  # of each method's budget the background may use at most
_ANY: Final = "*"  # the key of the workspace-wide spacing


class PriorityLimiter:
    """The answers' limiter (``Limiter``), with ``background`` for the backfill.

    ``per_minute`` maps each method the background uses to its budget in calls a minute (the
    tightest that applies to it: the method's own or the workspace's); ``share`` is the part
    of it the background may use; ``workspace_per_minute``: the budget every method shares, of
    which the background also keeps to that share; ``minute`` as the inner limiter's.
    """

    def __init__(
        self,
        inner: Limiter,
        per_minute: Mapping[str, float],
        *,
        share: float = BACKGROUND_SHARE,
        clock: Clock = time.monotonic,
        minute: float = 60.0,
        workspace_per_minute: float | None = None,
    ) -> None:
        if not 0.0 < share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        self.inner = inner
        self._clock = clock
        self._lock = threading.Lock()
        rates = {m: check_rate(f"per_minute[{m!r}]", r) for m, r in per_minute.items()}
        minute = check_minute(minute)
        self._interval = {m: minute / r for m, r in rates.items()}  # one refill, seconds
        self._spacing = {m: minute / (r * share) for m, r in rates.items()}
        self._next_background: dict[str, float] = {}
        # The workspace's budget is shared by every method: the background keeps to its share
        # of that too, whichever methods it calls ("*": its next call of any method).
        if workspace_per_minute is not None:
            rate = check_rate("workspace_per_minute", workspace_per_minute)
            self._spacing[_ANY] = minute / (rate * share)
        self._wanted_until: dict[str, float] = {}  # method -> background yields until then
        self._waiting: Counter[str] = Counter()  # answers inside acquire, per method
        self.background = _Background(self)

    # -- the answers' lane (Limiter) ----------------------------------------------------------

    def wait_time(self, method: str) -> float:
        return self.inner.wait_time(method)

    def try_acquire(self, method: str) -> bool:
        self._want(method)
        return self.inner.try_acquire(method)

    def acquire(
        self,
        method: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        self._want(method)
        with self._lock:
            self._waiting[method] += 1
        try:
            self.inner.acquire(method, sleep=sleep, max_wait=max_wait)
        finally:
            with self._lock:
                self._waiting[method] -= 1
            self._want(method)  # the next page of this answer comes within the interval

    def penalize(self, method: str, retry_after: float, *, all_methods: bool = False) -> None:
        self.inner.penalize(method, retry_after, all_methods=all_methods)

    def _want(self, method: str) -> None:
        with self._lock:
            until = self._clock() + self._interval.get(method, 0.0)
            self._wanted_until[method] = max(self._wanted_until.get(method, -math.inf), until)

    # -- the background lane ------------------------------------------------------------------

    def background_wait(self, method: str) -> float:
        """Seconds until the background may try ``method`` again (0: it may try now)."""
        with self._lock:
            now = self._clock()
            own = max(
                self._next(method), self._next(_ANY), self._wanted_until.get(method, -math.inf)
            )
            if self._waiting[method]:
                own = max(own, now + self._interval.get(method, 1.0))
        return max(0.0, own - now, self.inner.wait_time(method))

    def try_background(self, method: str) -> bool:
        """Take a call of ``method`` for the background if the rules above allow it now."""
        with self._lock:
            now = self._clock()
            if self._waiting[method] or self._wanted_until.get(method, -math.inf) > now:
                return False
            if max(self._next(method), self._next(_ANY)) > now:
                return False
        if not self.inner.try_acquire(method):
            return False
        with self._lock:
            for key in (method, _ANY):
                self._next_background[key] = max(self._next(key), now) + self._spacing.get(key, 0)
        return True

    def _next(self, key: str) -> float:
        # Caller holds the lock.
        return self._next_background.get(key, -math.inf)


class _Background:
    """``PriorityLimiter``'s background lane as a ``Limiter`` (for a fetcher of its own)."""

    def __init__(self, owner: PriorityLimiter) -> None:
        self._owner = owner

    def wait_time(self, method: str) -> float:
        return self._owner.background_wait(method)

    def try_acquire(self, method: str) -> bool:
        return self._owner.try_background(method)

    def acquire(
        self,
        method: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        max_wait: float | None = None,
    ) -> None:
        """Wait for the background's turn: it is never reserved, so it is tried again after
        each sleep (an answer that comes meanwhile goes first)."""
        waited = 0.0
        while not self._owner.try_background(method):
            wait = max(self._owner.background_wait(method), 0.01)
            if max_wait is not None and waited + wait > max_wait:
                raise RateLimited(method, wait)
            sleep(wait)
            waited += wait

    def penalize(self, method: str, retry_after: float, *, all_methods: bool = False) -> None:
        self._owner.penalize(method, retry_after, all_methods=all_methods)
