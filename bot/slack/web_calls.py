"""What a Slack Web API call comes to: the rules ``SlackFetcher`` retries by, and what it counts.

A call that Slack answers with 429 waits its Retry-After; a 5xx, a connection error or one of
the errors Slack answers with HTTP 200 that mean "try again" is retried with a doubling backoff;
any other error is an answer ("not found"), not a failure. ``counted_reads`` lets an answer know
how many Slack reads it cost (0 in steady state).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Final

from chanctx.context import ChanctxError

__all__ = [
    "TRANSIENT_ERRORS",
    "SlackUnavailable",
    "backoff",
    "count_read",
    "counted_reads",
    "describe",
    "retry_after",
]

# The Slack calls of the turn this thread is answering (None outside a turn).
_TURN_READS: ContextVar[Counter[str] | None] = ContextVar("chanctx_turn_reads", default=None)


@contextlib.contextmanager
def counted_reads() -> Iterator[Counter[str]]:
    """Count the Web API calls this thread makes through a ``SlackFetcher`` until the block
    ends: what one answer cost in Slack reads (0 in steady state)."""
    reads: Counter[str] = Counter()
    token = _TURN_READS.set(reads)
    try:
        yield reads
    finally:
        _TURN_READS.reset(token)


def count_read(method: str) -> None:
    """Count one call in the reads of the turn this thread is answering, if any."""
    reads = _TURN_READS.get()
    if reads is not None:
        reads[method] += 1


_BACKOFF: Final = 0.5  # first retry delay after a 5xx or a connection error; doubles each time
_MAX_BACKOFF: Final = 8.0
# Errors Slack answers with HTTP 200 that mean "try again", not "no such thing".
TRANSIENT_ERRORS: Final = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)


def backoff(attempts: int) -> float:
    """Seconds to wait before retry number ``attempts`` (1, 2, ...) of a failed call."""
    return min(_BACKOFF * 2.0 ** (attempts - 1), _MAX_BACKOFF)


class SlackUnavailable(ChanctxError):
    """Slack kept failing (5xx or no connection) for ``method`` after every retry."""

    def __init__(self, method: str, attempts: int, detail: str) -> None:
        super().__init__(f"Slack API {method} unavailable after {attempts} attempt(s): {detail}")
        self.method = method
        self.attempts = attempts


def retry_after(headers: Mapping[str, Any] | None) -> float:
    """The Retry-After header in seconds; 1 s if absent or unreadable (Slack always sends it)."""
    for name, value in (headers or {}).items():
        if name.lower() == "retry-after":
            try:
                seconds = float(value[0] if isinstance(value, list) else value)
            except (TypeError, ValueError):
                return 1.0
            return seconds if 0 <= seconds < 3600 else 1.0
    return 1.0


def describe(params: Mapping[str, Any]) -> str:
    # Only the ids that say what was asked: never a token, never message text.
    return " ".join(f"{k}={params[k]}" for k in ("channel", "ts", "user") if k in params)
