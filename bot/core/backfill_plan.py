"""What a channel's backfill still wants, decided from its stored cursor alone.

The cursor of kind ``history`` says how far back, from the newest, the store holds a channel's
history as read from Slack (``oldest_ts``), whether that reaches the channel's beginning
(``complete``) and how far back the pass wanted to go (``goal_ts``). The warm-up writes the
first one (its one page); the backfill moves it back a page at a time, in the same write as
the page, so a restart goes on from the last page committed and a pass that reached its goal
is never run again.

An import writes the cursor too, for the range its export held: ``oldest_ts`` the export's
oldest message and ``newest_ts`` its newest. Such a channel is held (a start reads it from the
store), but what Slack holds since the export is a gap: the first load reads the newest page of
it (``oldest=newest_ts``), the backfill the rest, downwards, its progress in a cursor of kind
``history-gap``; once the gap is read, ``newest_ts`` goes (held up to now) in the same write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from chanctx.cache import ts_key
from chanctx.cache.channel_store import BackfillCursor

__all__ = [
    "GAP",
    "HISTORY",
    "BackfillMode",
    "BackfillSettings",
    "gap_after",
    "goal_ts",
    "imported_cursor",
    "loaded_cursors",
    "pending",
    "ts_text",
]

HISTORY: Final = "history"  # the cursor kind (shared with the warm-up and the import)
# How far down from the present the gap above an imported range has been read (``oldest_ts``;
# ``goal_ts``: the imported range's newest, where the gap ends).
GAP: Final = "history-gap"
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


def gap_after(cursor: BackfillCursor | None) -> str | None:
    """The newest ts of a held range that stops short of the present (an import): Slack's
    messages newer than it are still to read. None: nothing held, or held up to now."""
    return None if cursor is None else cursor.newest_ts


def imported_cursor(
    held: BackfillCursor | None, oldest: str, newest: str, now: float
) -> BackfillCursor | None:
    """The ``history`` cursor once an export holding ``oldest``..``newest`` is stored (None:
    keep ``held``). An export that meets the held range extends it; one older than it, with a
    gap between, leaves it (the backfill reads down from the held range as before); a later
    export than an earlier one replaces its range, being nearer the present."""
    if held is None:
        return BackfillCursor(oldest_ts=oldest, newest_ts=newest, updated=now)
    if held.complete or held.oldest_ts is None:
        return None  # the whole channel was read from Slack, or nothing is known to meet
    low, high = ts_key(oldest), ts_key(newest)
    top = None if held.newest_ts is None else ts_key(held.newest_ts)
    if high >= ts_key(held.oldest_ts) and (top is None or low <= top):  # they meet
        if low >= ts_key(held.oldest_ts) and (top is None or high <= top):
            return None  # nothing new in range
        return held.model_copy(
            update={
                "oldest_ts": oldest if low < ts_key(held.oldest_ts) else held.oldest_ts,
                "newest_ts": None if top is None else (newest if high > top else held.newest_ts),
                "updated": now,
            }
        )
    if top is not None and low > top:  # a later export, apart from the earlier one
        return BackfillCursor(oldest_ts=oldest, newest_ts=newest, updated=now)
    return None


def loaded_cursors(
    held: BackfillCursor | None,
    gap: BackfillCursor | None,
    page_oldest: str | None,
    full: bool,
    now: float,
) -> dict[str, BackfillCursor]:
    """The cursors (by kind) a first load's page of the newest messages moves ({}: keep what is
    stored). ``full``: the page stopped at its limit, so Slack may hold more below it."""
    if held is None:
        return {HISTORY: BackfillCursor(oldest_ts=page_oldest, complete=not full, updated=now)}
    if held.newest_ts is None:
        return {}  # the backfill or an earlier load got there first: keep its cursor
    if not full or (page_oldest is not None and ts_key(page_oldest) <= ts_key(held.newest_ts)):
        # The page reaches the imported range: the gap is read, held up to now.
        return {HISTORY: held.model_copy(update={"newest_ts": None, "updated": now})}
    read = None if gap is None else gap.oldest_ts
    if read is not None and page_oldest is not None and ts_key(read) <= ts_key(page_oldest):
        return {}  # the backfill read further down the gap already
    return {GAP: BackfillCursor(oldest_ts=page_oldest, goal_ts=held.newest_ts, updated=now)}
