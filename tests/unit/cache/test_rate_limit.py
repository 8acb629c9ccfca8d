"""RateLimiter: token buckets for the workspace and per method, checked on a fake clock."""

from __future__ import annotations

import itertools
import threading

import pytest
from chanctx.cache import FakeClock, RateLimited, RateLimiter
from chanctx.context import ChanctxError
from hypothesis import given, settings
from hypothesis import strategies as st

REPLIES = "conversations.replies"
HISTORY = "conversations.history"
EPS = 1e-6  # float slack when comparing accumulated fake-clock times


class Sleeper:
    """A fake ``sleep``: records each wait and moves the fake clock (if any) instead of sleeping."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.clock = clock
        self.waits: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        with self._lock:
            self.waits.append(seconds)
        if self.clock is not None:
            self.clock.advance(seconds)


def test_workspace_bucket_allows_a_burst_of_capacity_then_refills() -> None:
    clock = FakeClock()
    limiter = RateLimiter(calls_per_minute=40, clock=clock)
    assert limiter.capacity == pytest.approx(40)
    assert sum(limiter.try_acquire(HISTORY) for _ in range(100)) == 40
    assert limiter.wait_time(HISTORY) == pytest.approx(1.5)  # 60 s / 40 calls
    clock.advance(1.5)
    assert limiter.wait_time(HISTORY) == 0.0
    assert limiter.try_acquire(HISTORY)
    assert not limiter.try_acquire(HISTORY)


def test_replies_default_to_one_call_per_minute() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    assert limiter.try_acquire(REPLIES)
    assert not limiter.try_acquire(REPLIES)
    assert limiter.wait_time(REPLIES) == pytest.approx(60)
    # Other methods only share the workspace bucket.
    assert limiter.try_acquire(HISTORY)
    clock.advance(59.9)
    assert not limiter.try_acquire(REPLIES)
    clock.advance(0.1)
    assert limiter.try_acquire(REPLIES)


def test_a_call_takes_from_both_buckets_or_neither() -> None:
    clock = FakeClock()
    limiter = RateLimiter(calls_per_minute=2, per_method={REPLIES: 1}, clock=clock)
    assert limiter.try_acquire(REPLIES)
    # Denied by the method bucket: the workspace bucket must not lose a token for it.
    assert not limiter.try_acquire(REPLIES)
    assert limiter.try_acquire(HISTORY)
    assert not limiter.try_acquire(HISTORY)


def test_empty_per_method_means_workspace_only() -> None:
    limiter = RateLimiter(calls_per_minute=5, per_method={}, clock=FakeClock())
    assert sum(limiter.try_acquire(REPLIES) for _ in range(10)) == 5


def test_acquire_queues_and_sleeps_the_wait() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limiter = RateLimiter(calls_per_minute=60, per_method={}, clock=clock)
    for _ in range(61):
        limiter.acquire(HISTORY, sleep=sleep)
    assert sleep.waits == [pytest.approx(1.0)]  # only the 61st waited, one refill interval


def test_acquire_reserves_slots_even_when_sleep_does_not_move_the_clock() -> None:
    # A virtual clock that stands still must not make acquire spin or grant twice.
    sleep = Sleeper()
    limiter = RateLimiter(clock=FakeClock(), calls_per_minute=40)
    for _ in range(3):
        limiter.acquire(REPLIES, sleep=sleep)
    assert sleep.waits == [pytest.approx(60), pytest.approx(120)]


def test_max_wait_raises_rate_limited_and_takes_nothing() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    limiter.acquire(REPLIES, sleep=Sleeper(clock))
    with pytest.raises(RateLimited) as caught:
        limiter.acquire(REPLIES, sleep=Sleeper(clock), max_wait=10)
    assert caught.value.method == REPLIES
    assert caught.value.retry_after == pytest.approx(60)
    assert limiter.wait_time(REPLIES) == pytest.approx(60)  # no slot was reserved


def test_rate_limited_is_a_chanctx_error_naming_method_and_wait() -> None:
    error = RateLimited(REPLIES, 42.0)
    assert isinstance(error, ChanctxError)
    assert REPLIES in str(error)
    assert "42.0 s" in str(error)


def test_penalize_blocks_the_method_for_retry_after() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    limiter.penalize("users.info", 30)
    assert limiter.wait_time("users.info") == pytest.approx(30)
    assert not limiter.try_acquire("users.info")
    assert limiter.try_acquire(HISTORY)  # Slack's 429s are per method
    clock.advance(30)
    assert limiter.try_acquire("users.info")


def test_penalize_all_methods() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    limiter.penalize("users.info", 5, all_methods=True)
    assert not limiter.try_acquire(HISTORY)
    assert limiter.wait_time("auth.test") == pytest.approx(5)
    # A shorter later penalty never shortens a longer one.
    limiter.penalize("users.info", 1, all_methods=True)
    assert limiter.wait_time(HISTORY) == pytest.approx(5)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "40"])
def test_bad_rates_are_rejected(bad: object) -> None:
    with pytest.raises(ValueError, match="calls per minute"):
        RateLimiter(calls_per_minute=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="per_method"):
        RateLimiter(per_method={REPLIES: bad})  # type: ignore[dict-item]


def test_bad_retry_after_is_rejected() -> None:
    with pytest.raises(ValueError, match="retry_after"):
        RateLimiter().penalize(REPLIES, -1)


def test_a_rate_below_one_per_minute_still_allows_calls() -> None:
    clock = FakeClock()
    limiter = RateLimiter(per_method={REPLIES: 0.5}, clock=clock)
    assert limiter.try_acquire(REPLIES)
    assert limiter.wait_time(REPLIES) == pytest.approx(120)


# Steps of (milliseconds to advance, method to try): times stay on a millisecond grid.
steps = st.lists(
    st.tuples(st.integers(0, 90_000), st.sampled_from([HISTORY, REPLIES, "users.info"])),
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(steps=steps, per_minute=st.integers(1, 50))
def test_no_window_ever_exceeds_capacity_plus_refill(
    steps: list[tuple[int, str]], per_minute: int
) -> None:
    clock = FakeClock()
    limiter = RateLimiter(calls_per_minute=per_minute, clock=clock)
    granted: list[float] = []
    replies: list[float] = []
    for millis, method in steps:
        clock.advance(millis / 1000)
        could = limiter.wait_time(method) == 0.0
        ok = limiter.try_acquire(method)
        assert ok == could  # wait_time and try_acquire agree
        if ok:
            granted.append(clock.now)
            if method == REPLIES:
                replies.append(clock.now)
    for window in (0.0, 30.0, 60.0):
        bound = per_minute + window * per_minute / 60
        for start in granted:
            inside = sum(start <= t <= start + window + EPS for t in granted)
            assert inside <= bound + EPS, (window, start, inside, bound)
    # conversations.replies: at most one call in any minute.
    assert all(b - a >= 60 - EPS for a, b in itertools.pairwise(replies))


def test_threads_never_get_more_than_capacity() -> None:
    limiter = RateLimiter(calls_per_minute=40, clock=FakeClock())  # the clock never moves
    granted = {HISTORY: 0, REPLIES: 0}
    lock = threading.Lock()

    def worker(method: str) -> None:
        got = sum(limiter.try_acquire(method) for _ in range(50))
        with lock:
            granted[method] += got

    threads = [
        threading.Thread(target=worker, args=(REPLIES if i % 2 else HISTORY,)) for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert granted[HISTORY] + granted[REPLIES] == 40
    assert granted[REPLIES] <= 1


def test_threads_acquiring_get_distinct_slots() -> None:
    sleep = Sleeper()  # does not move the clock: every reservation is in the future
    limiter = RateLimiter(calls_per_minute=5, per_method={}, clock=FakeClock())
    threads = [
        threading.Thread(target=limiter.acquire, args=(HISTORY,), kwargs={"sleep": sleep})
        for _ in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 5 at once, then one every 12 s, each thread its own slot.
    assert sorted(sleep.waits) == [pytest.approx(12.0 * k) for k in range(1, 16)]
