"""Taking turns from the shared queue: as many as this replica has free workers, no more.

One thread per replica. It reads new entries from the consumer group (blocking up to a second),
claims entries whose replica stopped renewing them for the lease (dead, or cut off from Redis),
and renews the lease of every turn still running here a few times per lease, so a live replica
never loses a slow answer. Reading only as many entries as there are free workers spreads the
load: a busy replica leaves new questions to an idle one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

import redis
from chanctx.bot.stores.redis_link import BLOCK_MS, RedisLink
from chanctx.manifest_store import QueuedTurn, RedisTurnStore, StoreUnavailable, is_outage

__all__ = ["TurnConsumer"]

logger = logging.getLogger("chanctx.turn_queue")
_FORGET_CONSUMERS_EVERY: Final = 600.0  # seconds between tidying replicas long gone
_CONSUMER_IDLE_MS: Final = 3_600_000

Take = Callable[[QueuedTurn, Callable[[QueuedTurn], None]], bool]


class TurnConsumer:
    def __init__(
        self, store: RedisTurnStore, link: RedisLink, take: Take, *, workers: int, lease: float
    ) -> None:
        """``take(turn, done)`` hands a turn to the answer runner (False if it is running here
        already) and calls ``done(turn)`` when the answer ends, whatever its outcome."""
        self.store = store
        self._link = link
        self._take = take
        self.workers = workers
        self.lease = lease
        self._running: dict[str, str] = {}  # turn id -> stream entry, for lease renewal
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._group_ready = False
        self._on_renew: list[Callable[[], None]] = []
        self.taken = 0
        self.claimed = 0

    @property
    def lease_ms(self) -> int:
        return max(1, round(self.lease * 1000))

    @property
    def ready(self) -> bool:
        return self._group_ready and self._link.healthy

    def on_renew(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` with each renewal (the thread leases renew with the turns')."""
        self._on_renew.append(callback)

    def start(self) -> None:
        self._link.on_recover(self._make_group)
        self._thread = threading.Thread(target=self._loop, name="chanctx-turns", daemon=True)
        self._thread.start()

    def _make_group(self) -> None:
        self.store.ensure_group()
        self._group_ready = True

    def _remake_group(self) -> None:
        logger.warning("the answerers group is gone (Redis lost its data?): making it again")
        try:
            self.store.ensure_group()
        except (StoreUnavailable, redis.RedisError) as error:
            self._link.failed(error.__cause__ or error)
            self._stop.wait(0.2)

    def running(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._running.items())

    def _done(self, turn: QueuedTurn) -> None:
        with self._lock:
            self._running.pop(turn.turn_id, None)
        self._wake.set()  # a worker is free: read again now

    def _hand_over(self, turns: list[QueuedTurn]) -> None:
        for turn in turns:
            with self._lock:
                self._running[turn.turn_id] = turn.entry
            # False: it is running here already (claimed back after a renewal failed); it stays
            # in the running list, and its first hand-over's ``done`` takes it out.
            self._take(turn, self._done)

    def _loop(self) -> None:
        renew_every, claim_every = self.lease / 3, min(self.lease / 2, 5.0)
        renewed = claimed = forgot = 0.0
        while not self._stop.is_set():
            if not (self._link.healthy and self._group_ready):
                self._stop.wait(0.2)
                continue
            try:
                now = time.monotonic()
                if now - renewed >= renew_every:
                    self.store.renew(self.running())
                    for callback in self._on_renew:
                        callback()
                    renewed = now
                free = self.workers - len(self.running())
                if free > 0 and now - claimed >= claim_every:
                    stale = self.store.claim_stale(self.lease_ms, free)
                    self.claimed += len(stale)
                    if stale:
                        logger.info("claimed %d turns left by another replica", len(stale))
                    self._hand_over(stale)
                    claimed = now
                if now - forgot >= _FORGET_CONSUMERS_EVERY:
                    self.store.forget_idle_consumers(_CONSUMER_IDLE_MS)
                    forgot = now
                free = self.workers - len(self.running())
                if free <= 0:
                    self._wake.wait(min(0.2, renew_every))
                    self._wake.clear()
                    continue
                block = max(1, min(BLOCK_MS, round(renew_every * 1000)))
                fresh = self.store.read_new(free, block)
                self.taken += len(fresh)
                self._hand_over(fresh)
            except (StoreUnavailable, redis.RedisError) as error:
                if "NOGROUP" in str(error):  # Redis came back without its data
                    self._remake_group()
                    continue
                if not is_outage(error):
                    logger.exception("the turn queue failed")
                self._link.failed(error.__cause__ or error)
                self._stop.wait(0.2)
            except Exception:  # a bug must not stop this replica from answering
                logger.exception("the turn queue loop failed")
                self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=BLOCK_MS / 1000 + 3)

    def release(self) -> None:
        """Leaving with answers still running: another replica may take them at once."""
        running = self.running()
        if not running:
            return
        try:
            self.store.release(running, self.lease_ms)
            logger.info("handed %d unfinished turns back to the queue", len(running))
        except StoreUnavailable as error:
            logger.warning("could not hand back unfinished turns (%s): they wait the lease", error)
