"""One answer's rate-limit waiting: a turn may wait so long for Slack in all (its context and
every tool's fetch share it); outside a turn each fetch waits up to the setting."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = ["TURN_WAIT_LEFT", "spend_wait", "turn_wait_budget", "wait_left"]

# Rate-limit seconds the running answer may still wait (None outside an answer).
TURN_WAIT_LEFT: ContextVar[float | None] = ContextVar("chanctx_turn_wait_left", default=None)


@contextlib.contextmanager
def turn_wait_budget(seconds: float) -> Iterator[None]:
    """Inside: the running answer may wait ``seconds`` in all."""
    token = TURN_WAIT_LEFT.set(seconds)
    try:
        yield
    finally:
        TURN_WAIT_LEFT.reset(token)


def wait_left(cap: float) -> float:
    """Seconds this fetch may wait: what is left of the turn's, at most ``cap``."""
    left = TURN_WAIT_LEFT.get()
    return cap if left is None else min(cap, left)


def spend_wait(waited: float) -> None:
    """A fetch waited ``waited`` seconds: the turn has that much less."""
    left = TURN_WAIT_LEFT.get()
    if left is not None:
        TURN_WAIT_LEFT.set(max(0.0, left - waited))
