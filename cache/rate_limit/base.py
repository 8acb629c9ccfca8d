"""The Slack API rate limit: a workspace budget plus stricter per-method budgets.

Slack counts calls per method per workspace, and since 2025 new non-Marketplace apps may call
``conversations.replies`` once a minute. Staying under the limit beats reacting to 429s: a 429
costs a round trip and, while it lasts, blocks every call of that method. ``Limiter`` is what
the Slack client needs of a limiter; the backends beside this module keep the budgets.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final, Protocol

from chanctx.context import ChanctxError

__all__ = [
    "DEFAULT_PER_METHOD",
    "Limiter",
    "RateLimited",
    "check_minute",
    "check_rate",
    "check_retry_after",
]

# Slack's 2025 limit for conversations.replies in new non-Marketplace apps, in calls per minute.
DEFAULT_PER_METHOD: Final[Mapping[str, float]] = {"conversations.replies": 1}


class RateLimited(ChanctxError):
    """A Slack API call that may not be sent now; ``retry_after`` seconds until it may."""

    def __init__(self, method: str, retry_after: float) -> None:
        super().__init__(
            f"Slack API method {method} is rate limited; retry in {max(retry_after, 0.0):.1f} s"
        )
        self.method = method
        self.retry_after = retry_after


def check_rate(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a positive number of calls per minute, got {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number of calls per minute, got {value!r}")
    return float(value)


def check_minute(value: float) -> float:
    """How long a minute of the budgets lasts: 60 s, or shorter against a fake Slack's."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"minute must be a positive number of seconds, got {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"minute must be a positive number of seconds, got {value!r}")
    return float(value)


def check_retry_after(retry_after: float) -> None:
    if not retry_after >= 0 or not math.isfinite(retry_after):
        raise ValueError(
            f"retry_after must be a finite number of seconds >= 0, got {retry_after!r}"
        )


class Limiter(Protocol):
    """What the Slack client needs of a rate limiter, wherever its buckets are kept.

    ``wait_time`` says how long until a call of ``method`` may go (0: now) without taking it;
    ``try_acquire`` takes a slot only if one is free now; ``acquire`` reserves the earliest slot
    and sleeps until it, or raises :class:`RateLimited` when that is more than ``max_wait``
    away; ``penalize`` applies a 429's ``Retry-After`` to the method (or to every method).
    """

    def wait_time(self, method: str) -> float: ...

    def try_acquire(self, method: str) -> bool: ...

    def acquire(
        self, method: str, *, sleep: Callable[[float], None] = ..., max_wait: float | None = ...
    ) -> None: ...

    def penalize(self, method: str, retry_after: float, *, all_methods: bool = ...) -> None: ...
