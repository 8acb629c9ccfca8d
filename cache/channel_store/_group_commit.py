"""Group commit: many callers' events in one transaction, each caller acked after its commit.

Slack events arrive one per HTTP request; a commit (an fsync) per event would cap intake at the
disk's fsync rate. :class:`GroupCommitter` runs one writer thread: :meth:`submit` queues a
caller's events and blocks until the batch holding them is committed, then returns that
batch's outcome for them, or raises what the commit raised (``StoreFull``: refuse the event).
A batch that fails for another reason (one malformed event) is retried one submission at a
time, in queue order, so one caller's bad event never refuses another's.

A caller that has a batch of its own (the quick intake: many events, taken at once, each
acknowledged after its commit) writes it on its own thread with :func:`write_parts`: the same
rules, a part (one event's records) in place of a submission, and no hand-off to the writer
thread and back (a wake-up each way, a ``Future`` a part), which cost more CPU than the
writer's own Python; the store's write lock orders it with the writer thread's commits.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future

from chanctx.cache.channel_store._errors import StoreFull
from chanctx.cache.channel_store._protocol import ChannelStore
from chanctx.cache.channel_store._records import StoreEvent, WriteResult

__all__ = ["GroupCommitter", "PartOutcomes", "write_parts"]

_Pending = tuple[Sequence[StoreEvent], "Future[WriteResult]"]
# Per part of a batch: the outcome of the commit that stored it, or why it was not stored.
PartOutcomes = list[WriteResult | Exception]


def write_parts(store: ChannelStore, parts: Sequence[Sequence[StoreEvent]]) -> PartOutcomes:
    """``parts`` in one transaction, on the caller's thread; an outcome a part. A full disk
    raises ``StoreFull`` (none is stored); any other failure (one malformed event) writes each
    part alone, in order, so only the bad one fails."""
    try:
        result = store.write([event for part in parts for event in part])
    except StoreFull:
        raise
    except Exception:
        return [_alone(store, part) for part in parts]
    return [result] * len(parts)


def _alone(store: ChannelStore, part: Sequence[StoreEvent]) -> WriteResult | Exception:
    try:
        return store.write(part)
    except Exception as error:
        return error


class GroupCommitter:
    def __init__(self, store: ChannelStore, *, max_events: int = 2_000) -> None:
        self._store = store
        self._max_events = max_events
        self._queue: deque[_Pending] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="channel-store-commit", daemon=True)
        self._thread.start()

    def submit(self, events: Sequence[StoreEvent]) -> WriteResult:
        """Block until ``events`` are committed; their batch's outcome (or its error)."""
        return self.submit_nowait(events).result()

    def submit_nowait(self, events: Sequence[StoreEvent]) -> Future[WriteResult]:
        done: Future[WriteResult] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the group committer is closed")
            self._queue.append((events, done))
            self._ready.notify()
        return done

    def close(self) -> None:
        """Commit what is queued, then stop the writer thread."""
        with self._ready:
            self._closed = True
            self._ready.notify()
        self._thread.join()

    def _take(self) -> list[_Pending]:
        with self._ready:
            while not self._queue and not self._closed:
                self._ready.wait()
            taken: list[_Pending] = []
            count = 0
            while self._queue and (not taken or count + len(self._queue[0][0]) <= self._max_events):
                pending = self._queue.popleft()
                taken.append(pending)
                count += len(pending[0])
            return taken

    def _run(self) -> None:
        while True:
            taken = self._take()
            if not taken:
                return
            try:
                outcomes = write_parts(self._store, [events for events, _ in taken])
            except StoreFull as error:
                for _, done in taken:
                    done.set_exception(error)
                continue
            for (_, done), outcome in zip(taken, outcomes, strict=True):
                if isinstance(outcome, Exception):
                    done.set_exception(outcome)
                else:
                    done.set_result(outcome)
