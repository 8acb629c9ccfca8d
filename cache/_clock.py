"""Time sources for the caches.

Caches take a ``clock`` instead of calling ``time.monotonic`` directly so that tests, and a replay
that takes time from events, decide when entries expire.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Clock", "FakeClock", "check_ttl", "default_clock"]

Clock: TypeAlias = Callable[[], float]
"""Seconds on a monotonic scale; only differences matter."""

default_clock: Clock = time.monotonic


class FakeClock:
    """A clock that only moves when told to: deterministic TTL expiry in tests and replays."""

    def __init__(self, start: float = 0.0) -> None:
        if not math.isfinite(start):
            raise ValueError(f"FakeClock start must be a finite number, got {start!r}")
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        """Move forward by ``seconds`` (never back: it is monotonic); return the new time."""
        if not seconds >= 0 or not math.isfinite(seconds):
            raise ValueError(
                f"FakeClock can only advance by a finite non-negative amount, got {seconds!r}"
            )
        self.now += seconds
        return self.now


def check_ttl(name: str, value: float) -> float:
    """``value`` as a positive number of seconds (``math.inf`` allowed), else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)
