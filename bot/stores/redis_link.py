"""The replica's connection to Redis and whether Redis answers right now.

Two clients: one for short commands (a 2 s timeout, so an ack never waits on a dead Redis longer
than Slack's own 3 s), one for the blocking reads of the change stream and the turn queue. A
monitor thread pings every half second: the replica is unready while Redis does not answer, and
recovers by itself when it does again (callbacks run then: the group is made again if Redis came
back empty, the change stream is read from where this replica stopped).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

import redis
from chanctx.manifest_store import connect, is_outage

__all__ = ["BLOCK_MS", "RedisLink"]

logger = logging.getLogger("chanctx.redis")
BLOCK_MS: Final = 1_000  # longest a blocking read waits before the loop looks around again
_PING_EVERY: Final = 0.5


class RedisLink:
    def __init__(self, url: str, *, timeout: float = 2.0) -> None:
        self.url = url
        self.client = connect(url, timeout=timeout)
        self.blocking = connect(url, timeout=timeout + BLOCK_MS / 1000 + 2)
        self._healthy = False
        self._lock = threading.Lock()
        self._on_recover: list[Callable[[], None]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def healthy(self) -> bool:
        return self._healthy

    def on_recover(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` (on the monitor thread) each time Redis answers again."""
        self._on_recover.append(callback)

    def check(self) -> bool:
        """Ping now; True if Redis answered."""
        try:
            self.client.ping()
        except redis.RedisError as error:
            self.failed(error)
            return False
        with self._lock:
            was, self._healthy = self._healthy, True
        if not was:
            logger.info("Redis answers at %s", _safe(self.url))
            for callback in self._on_recover:
                try:
                    callback()
                except redis.RedisError as error:
                    self.failed(error)
                    return False
        return True

    def failed(self, error: BaseException) -> None:
        """An operation met an outage: unready until the next successful ping."""
        if not is_outage(error):
            return
        with self._lock:
            was, self._healthy = self._healthy, False
        if was:
            logger.warning(
                "Redis unavailable (%s): unready, events refused until it is back", error
            )

    def start(self) -> None:
        self._thread = threading.Thread(target=self._monitor, name="chanctx-redis", daemon=True)
        self._thread.start()

    def _monitor(self) -> None:
        while not self._stop.wait(_PING_EVERY):
            self.check()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.client.close()
        self.blocking.close()


def _safe(url: str) -> str:
    """The URL without its password, for logs."""
    head, at, tail = url.rpartition("@")
    return f"{head.split('://', 1)[0]}://***@{tail}" if at else url
