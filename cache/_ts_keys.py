"""The exact order of Slack timestamps: a ts as an integer count of nanoseconds.

``"999.1"`` sorts before ``"1000.0"`` with no float rounding, and two strings that denote the
same instant (``"1.5"`` and ``"1.500000"``) get the same key.
"""

from __future__ import annotations

from chanctx.context.timestamps import validate_ts

__all__ = ["raw_ts_key", "ts_key"]

_SCALE = 10**9  # a Slack ts has at most 9 fractional digits (validate_ts)


def ts_key(ts: str) -> int:
    """The exact sort key of a Slack ts: nanoseconds as an int. InvalidTimestamp if malformed."""
    return raw_ts_key(validate_ts(ts))


def raw_ts_key(ts: str) -> int:
    # For ts already validated (every Message field is): skip the regex.
    whole, _, frac = ts.partition(".")
    return int(whole) * _SCALE + int(frac.ljust(9, "0"))
