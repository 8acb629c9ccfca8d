"""Group commit: many callers' events in one transaction, each caller acked after its commit.

Slack events arrive one per HTTP request; a commit (an fsync) per event would cap intake at the
disk's fsync rate. :class:`GroupCommitter` runs one writer thread: :meth:`submit` queues a
caller's events and blocks until the batch holding them is committed, then returns that
batch's outcome for them, or raises what the commit raised (``StoreFull``: refuse the event).
A batch that fails for another reason (one malformed event) is retried one submission at a
time, so one caller's bad event never refuses another's.

Submissions are committed in the order they were queued, and their futures are set in that
order: :meth:`submit_each` queues several at once (one lock, one wake-up), so a caller that
must not wait for one commit before preparing the next (the quick intake) can queue a batch
of events, each its own submission, and go on; the batch's last future being done means
every earlier one is. A failed group retried one submission at a time is retried before any
later submission is taken, so the order holds on that path too.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future

from chanctx.cache.channel_store._errors import StoreFull
from chanctx.cache.channel_store._protocol import ChannelStore
from chanctx.cache.channel_store._records import StoreEvent, WriteResult

__all__ = ["GroupCommitter"]

_Pending = tuple[Sequence[StoreEvent], "Future[WriteResult]"]


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

    def submit_each(self, parts: Sequence[Sequence[StoreEvent]]) -> list[Future[WriteResult]]:
        """Queue each of ``parts`` as its own submission, in order, at once; their futures."""
        futures: list[Future[WriteResult]] = [Future() for _ in parts]
        with self._ready:
            if self._closed:
                raise RuntimeError("the group committer is closed")
            self._queue.extend(zip(parts, futures, strict=True))
            self._ready.notify()
        return futures

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
            events = [event for chunk, _ in taken for event in chunk]
            try:
                result = self._store.write(events)
            except StoreFull as error:
                for _, done in taken:
                    done.set_exception(error)
                continue
            except Exception:
                if len(taken) == 1:
                    self._one(taken[0])
                else:
                    for pending in taken:
                        self._one(pending)
                continue
            for _, done in taken:
                done.set_result(result)

    def _one(self, pending: _Pending) -> None:
        events, done = pending
        try:
            done.set_result(self._store.write(events))
        except Exception as error:
            done.set_exception(error)
