"""Slack timestamps: the message id form ("1700000000.123456") and ISO 8601 UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache

from chanctx.context.errors import InvalidTimestamp

__all__ = ["iso_from_ts", "seconds_from_ts", "validate_ts"]

_TS = re.compile(r"\d{1,12}(\.\d{1,9})?")


def validate_ts(ts: str) -> str:
    """Return ``ts`` unchanged if it is a Slack timestamp, else raise InvalidTimestamp."""
    if not isinstance(ts, str) or not _TS.fullmatch(ts):
        raise InvalidTimestamp(ts)
    return ts


def seconds_from_ts(ts: str) -> float:
    return float(validate_ts(ts))


def iso_from_ts(ts: str) -> str:
    """ISO 8601 UTC to the second, e.g. "2026-02-27T14:02:11Z".

    Seconds are enough for a reader; the exact ts stays in ``message_id``. The integer part is
    parsed as an integer so no float rounding can move a message into the next second.
    """
    return _iso_of_second(int(validate_ts(ts).split(".", 1)[0]))


@lru_cache(maxsize=16_384)
def _iso_of_second(whole: int) -> str:
    """Remembered per second: an answer writes every message's time, the same messages query
    after query, and ``strftime`` was a tenth of rendering a block."""
    return datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
