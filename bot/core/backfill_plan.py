"""What a channel's backfill still wants, decided from its stored cursor alone.

The cursor of kind ``history`` says how far back, from the newest, the store holds a channel's
history as read from Slack (``oldest_ts``), whether that reaches the channel's beginning
(``complete``) and how far back the pass wanted to go (``goal_ts``). The warm-up writes the
first one (its one page); the backfill moves it back a page at a time, in the same write as
the page, so a restart goes on from the last page committed and a pass that reached its goal
is never run again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from chanctx.cache import ts_key
from chanctx.cache.channel_store import BackfillCursor

__all__ = ["HISTORY", "BackfillMode", "BackfillSettings", "goal_ts", "pending", "ts_text"]

HISTORY: Final = "history"  # the cursor kind (shared with the warm-up)
BackfillMode = Literal["off", "recent", "all"]
_DAY: Final = 86_400.0


@dataclass(frozen=True)
class BackfillSettings:
    """``--backfill`` and ``--backfill-days``; ``page``: messages a call (the tier's)."""

    mode: BackfillMode = "recent"
    days: int = 30
    page: int = 200
    idle_seconds: float = 5.0  # between looks at the store for channels newly pending


def ts_text(seconds: float) -> str:
    return f"{seconds:.6f}"


def goal_ts(settings: BackfillSettings, now: float) -> str | None:
    """The oldest ts a pass started ``now`` wants: ``days`` back (recent), None (all)."""
    if settings.mode == "all":
        return None
    return ts_text(max(0.0, now - settings.days * _DAY))


def pending(cursor: BackfillCursor | None, goal: str | None) -> bool:
    """True if the channel's stored history does not yet reach back to ``goal`` (None: the
    channel's beginning). A pass that reached its goal left ``oldest_ts`` at it, so a later
    start with a goal no older finds nothing to do."""
    if cursor is None or cursor.complete:
        return cursor is None
    if cursor.oldest_ts is None:
        return True
    return ts_key(cursor.oldest_ts) > ts_key(goal if goal is not None else "0.000000")
