"""How many live messages a PostgreSQL channel holds, for search's inverse document frequencies,
without an answer waiting for the count.

Counting a channel reads every row of it (``doc IS NOT NULL`` is on the heap): about half a
second at 1,000,000 messages on the measurement machine, paid by whichever answer found the
count stale. So a count older than :data:`SIZE_TTL` is served while a thread of its own counts
again, and a channel never counted is counted on the spot only when the planner estimates it
small (at most :data:`COUNT_NOW`: a count of tens of milliseconds); a larger one is searched
with the planner's estimate (its statistics of the table, kept by autovacuum's ANALYZE) until
its count is in. An IDF moves little with the channel's size: an estimate a few percent off
shifts every term's weight by about as much.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from psycopg.rows import TupleRow

__all__ = ["COUNT_NOW", "SIZE_TTL", "ChannelSizes"]

logger = logging.getLogger("chanctx.channel_store")

SIZE_TTL = 300.0  # seconds a channel's counted size is trusted
COUNT_NOW = 200_000  # a channel estimated at most this large is counted before the search

Query = Callable[[str, Sequence[Any]], list[TupleRow]]
Start = Callable[[Callable[[], None]], None]


def _on_a_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="chanctx-pg-count", daemon=True).start()


class ChannelSizes:
    """Each channel's live messages, counted at most every SIZE_TTL seconds, off the answer's
    path once the channel is large (``start`` runs a recount: on a thread of its own)."""

    def __init__(
        self,
        query: Query,
        clock: Callable[[], float] = time.monotonic,
        start: Start = _on_a_thread,
        count_now: int = COUNT_NOW,
    ) -> None:
        self._query = query
        self._clock = clock
        self._start = start
        self._count_now = count_now
        self._lock = threading.Lock()
        self._known: dict[int, tuple[float, int]] = {}  # chan -> (counted at, live messages)
        self._counting: set[int] = set()

    def size(self, chan: int) -> int:
        with self._lock:
            known = self._known.get(chan)
            if known is not None and self._clock() - known[0] < SIZE_TTL:
                return known[1]
            busy = chan in self._counting
            self._counting.add(chan)
        if busy:  # another search is counting it
            return known[1] if known is not None else self._estimate(chan)
        if known is not None:
            self._start(lambda: self._recount(chan))
            return known[1]
        try:
            guess = self._estimate(chan)
        except BaseException:
            with self._lock:
                self._counting.discard(chan)
            raise
        if guess <= self._count_now:
            return self._count(chan)
        self._start(lambda: self._recount(chan))
        return guess

    def _estimate(self, chan: int) -> int:
        """The planner's estimate of the channel's live messages (its table statistics)."""
        plan = self._query(
            "EXPLAIN (FORMAT JSON) SELECT 1 FROM messages WHERE chan = %s AND doc IS NOT NULL",
            [chan],
        )[0][0]
        return max(1, int(plan[0]["Plan"]["Plan Rows"]))

    def _count(self, chan: int) -> int:
        try:
            started = self._clock()
            (count,) = self._query(
                "SELECT count(*) FROM messages WHERE chan = %s AND doc IS NOT NULL", [chan]
            )[0]
            with self._lock:
                self._known[chan] = (started, int(count))
            return int(count)
        finally:
            with self._lock:
                self._counting.discard(chan)

    def _recount(self, chan: int) -> None:
        try:
            self._count(chan)
        except Exception as error:  # the database is away: the next search asks again
            logger.debug("counting channel %d's messages failed: %s", chan, error)
