"""A clock for the fake Slack in tests that read it hundreds of times in what would otherwise be
one frozen instant: each reading is a little later than the last."""

from __future__ import annotations

import itertools
from collections.abc import Callable

__all__ = ["ticking_clock"]

# Tier 3 refills one history call every 1.2 s; a step a little longer keeps a test that reads
# history on every step inside Slack's budget, as a test that is not about tiers should be.
TIER_3_STEP = 1.25


def ticking_clock(start: float, step: float = TIER_3_STEP) -> Callable[[], float]:
    """``start``, then ``start + step``, ``start + 2 * step``, ... one value a call."""
    counter = itertools.count()
    return lambda: start + step * next(counter)
