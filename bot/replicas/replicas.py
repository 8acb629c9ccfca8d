"""Several replicas of one bot on one Redis: the pieces wired together for the runtime.

``Replicas`` is what ``Runtime`` sees (``bot.runtime.Replicas``): events are recorded through the
change stream, questions go to the shared turn queue, an answer runs under a lease on its thread
after reading the change stream to its end, and an outage or a lost lease leaves the turn to
the queue instead of failing it. Readiness: Redis answers, the change stream has been read to its
end once, the consumer group exists.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from chanctx.bot.core.engine import ContextEngine
from chanctx.bot.core.turns import Turn
from chanctx.bot.replicas.feed import ChangeFeed
from chanctx.bot.replicas.turn_queue import TurnConsumer
from chanctx.bot.stores.pane_threads.redis import RedisPaneThreads
from chanctx.bot.stores.redis_link import RedisLink
from chanctx.cache.channel_store import StoreUnavailable as DatabaseUnavailable
from chanctx.manifest_store import (
    HARMFUL,
    HELPFUL,
    QueuedTurn,
    RedisFeedbackStore,
    RedisPlaybookStore,
    RedisSessionStore,
    RedisTurnStore,
    StoreUnavailable,
    TurnTakenOver,
    is_outage,
)

__all__ = ["Replicas", "replica_name"]

logger = logging.getLogger("chanctx.replicas")


def replica_name() -> str:
    """This process's name in the consumer group: host, pid and a random tail, so a restart
    (same host, maybe the same pid in a container) is a new consumer."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class Replicas:
    def __init__(
        self,
        link: RedisLink,
        engine: ContextEngine,
        team: str,
        *,
        lease: float,
        retention: int,
        name: str | None = None,
        reactions: tuple[frozenset[str], frozenset[str]] = (HELPFUL, HARMFUL),
        shared_store: bool = False,
    ) -> None:
        self.link = link
        self.team = team
        self.name = name or replica_name()
        self.lease = lease
        self.feed = ChangeFeed(
            link, engine, team, self.name, retention=retention, shared=shared_store
        )
        self.turns = RedisTurnStore(link.client, team, self.name)
        self.sessions = RedisSessionStore(link.client, team)
        self.feedback = RedisFeedbackStore(
            link.client, team, helpful=reactions[0], harmful=reactions[1]
        )
        self.playbooks = RedisPlaybookStore(link.client, team)
        self.pane = RedisPaneThreads(link.client, team)
        self.consumer: TurnConsumer | None = None
        self._threads: dict[tuple[str, str], int] = {}  # thread leases held here
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        engine.learned = self.feed

    @property
    def lease_ms(self) -> int:
        return max(1, round(self.lease * 1000))

    def start(
        self, take: Callable[[QueuedTurn, Callable[[QueuedTurn], None]], bool], workers: int
    ) -> None:
        """Follow the change stream and take turns from the queue (``take`` hands one to the
        answer runner)."""
        self.consumer = TurnConsumer(self.turns, self.link, take, workers=workers, lease=self.lease)
        self.consumer.on_renew(self._renew_threads)
        self.feed.start()
        self.consumer.start()
        self.link.check()  # the group is made now, not half a second later
        self.link.start()

    def ready(self) -> bool:
        return (
            self.link.healthy
            and self.feed.synced
            and self.consumer is not None
            and self.consumer.ready
        )

    def status(self) -> dict[str, Any]:
        consumer = self.consumer
        return {
            "replica": self.name,
            "redis": self.link.healthy,
            "changes_applied": self.feed.applied,
            "changes_synced": self.feed.synced,
            "turns_taken": consumer.taken if consumer else 0,
            "turns_claimed": consumer.claimed if consumer else 0,
        }

    # -- the runtime's side ------------------------------------------------------------------

    def publish(self, event: Mapping[str, Any], event_id: str | None) -> bool:
        return self.feed.publish(event, event_id)

    def lost(self, error: BaseException) -> bool:
        """The answer cannot go on here, but the turn is not lost: Redis or the shared channel
        store's database is unavailable (it stays queued and is claimed again after the
        lease) or another replica took it."""
        return isinstance(error, TurnTakenOver | DatabaseUnavailable) or is_outage(error)

    @contextmanager
    def answering(self, turn: Turn) -> Iterator[None]:
        """One answer in a thread at a time across replicas; the change stream read to its end
        first, so the context holds everything recorded before the question was queued."""
        key = (turn.channel, turn.thread_ts)
        while not self.turns.lease_thread(*key, self.lease_ms):
            if self._stopping.is_set():
                raise StoreUnavailable("stopping: the turn stays queued for another replica")
            time.sleep(0.05)
        with self._lock:
            self._threads[key] = self._threads.get(key, 0) + 1
        try:
            self.feed.catch_up()
            yield
        finally:
            with self._lock:
                left = self._threads.get(key, 1) - 1
                if left:
                    self._threads[key] = left
                else:
                    self._threads.pop(key, None)
            if not left:
                with contextlib.suppress(StoreUnavailable):  # else it expires with the lease
                    self.turns.unlease_thread(*key)

    def _renew_threads(self) -> None:
        with self._lock:
            held = list(self._threads)
        for channel, thread_ts in held:
            self.turns.lease_thread(channel, thread_ts, self.lease_ms)

    def stop_taking(self) -> None:
        """Take no more turns from the queue (answers running here go on)."""
        self._stopping.set()
        if self.consumer is not None:
            self.consumer.stop()

    def stop(self, *, release: bool) -> None:
        """Close; ``release``: answers still running here are handed back to the queue at
        once (this process is about to exit under them)."""
        self.stop_taking()
        if release and self.consumer is not None:
            self.consumer.release()
            with self._lock:
                held = list(self._threads)
            for channel, thread_ts in held:  # their answers stop with this process
                with contextlib.suppress(StoreUnavailable):
                    self.turns.unlease_thread(channel, thread_ts)
        self.feed.close()
        self.link.close()
