"""A channel's first load from Slack, in the background: an answer waits for it at most its
rate-limit budget (``--max-wait``), then answers with what it has (the mention, the thread
from the event, what the store holds); the fetch goes on and fills the caches and the store
for the answers after it.

Under the limited tier the one ``conversations.history`` call may be a minute away; before
this, the first answer in a channel the store had never seen waited for it with no bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

__all__ = ["BackgroundWarmUps"]

logger = logging.getLogger("chanctx.engine")


class BackgroundWarmUps:
    """The warm-ups in flight, one per channel, on a few daemon-like worker threads."""

    def __init__(self, workers: int = 4) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="chanctx-warm")
        self._running: dict[str, Future[None]] = {}
        self._lock = threading.Lock()

    def run(self, channel: str, fetch: Callable[[], None], wait: float) -> float:
        """Start ``fetch`` for ``channel`` (or join the one running) and wait for it at most
        ``wait`` seconds; the seconds waited. A failed fetch was logged by its own thread."""
        with self._lock:
            future = self._running.get(channel)
            if future is None:
                future = self._pool.submit(self._fetch, channel, fetch)
                self._running[channel] = future
        started = time.monotonic()
        try:
            future.result(timeout=max(wait, 0.0))
        except FutureTimeout:
            logger.info(
                "%s: answering without its history (still loading after %.1f s)", channel, wait
            )
        except Exception:
            pass
        return time.monotonic() - started

    def _fetch(self, channel: str, fetch: Callable[[], None]) -> None:
        try:
            fetch()
        except Exception:
            logger.warning("loading the history of %s failed", channel, exc_info=True)
            raise
        finally:
            with self._lock:
                self._running.pop(channel, None)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
