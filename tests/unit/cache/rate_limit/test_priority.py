"""The background lane of the rate limiter: answers go first under either Slack tier."""

from __future__ import annotations

import contextlib

import pytest
from chanctx.cache import FakeClock, RateLimited, RateLimiter
from chanctx.cache.rate_limit import PriorityLimiter, slack_tier
from hypothesis import given
from hypothesis import strategies as st

HISTORY = "conversations.history"
REPLIES = "conversations.replies"


def tiered(name: str, clock: FakeClock) -> PriorityLimiter:
    tier = slack_tier(name)
    per_method, workspace = tier.per_method(), tier.workspace_per_minute
    inner = RateLimiter(calls_per_minute=workspace, per_method=per_method, clock=clock)
    binding = {m: min(r, workspace) for m, r in per_method.items()}
    return PriorityLimiter(inner, binding, clock=clock, workspace_per_minute=workspace)


steps = st.lists(
    st.tuples(st.floats(min_value=0.0, max_value=2.0), st.sampled_from([HISTORY, REPLIES])),
    max_size=400,
)


@given(steps)
def test_under_tier_3_the_backfill_never_leaves_an_answer_waiting(
    ops: list[tuple[float, str]],
) -> None:
    """However the background tries (as often as it likes, both methods), a budget of more
    than one call is never drained by it: an answer after it finds a call free at once."""
    clock = FakeClock(1_000.0)
    limiter = tiered("standard", clock)
    for pause, method in ops:
        clock.advance(pause)
        limiter.try_background(method)
    assert limiter.wait_time(HISTORY) == 0.0
    assert limiter.wait_time(REPLIES) == 0.0
    limiter.acquire(HISTORY, max_wait=0.0)  # raises RateLimited if it would wait


ops_with_answers = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=90.0),
        st.sampled_from(["answer", "background"]),
        st.sampled_from([HISTORY, REPLIES]),
    ),
    max_size=60,
)


@pytest.mark.parametrize("tier", ["standard", "limited"])
@given(ops=ops_with_answers)
def test_the_backfill_never_takes_a_call_an_answer_asked_for(
    tier: str, ops: list[tuple[float, str, str]]
) -> None:
    """After an answer asked for a method (whether it got the call or not), the background
    takes none of that method for one refill interval: the next call is the answer's."""
    clock = FakeClock(1_000.0)
    limiter = tiered(tier, clock)
    interval = 60.0 / min(slack_tier(tier).history_per_minute, 40.0)
    asked: dict[str, float] = {}
    for pause, who, method in ops:
        clock.advance(pause)
        if who == "answer":
            with contextlib.suppress(RateLimited):
                limiter.acquire(method, max_wait=0.0, sleep=lambda s: None)
            asked[method] = clock()
        else:
            took = limiter.try_background(method)
            if method in asked and clock() - asked[method] < interval:
                assert not took


def test_an_answer_waiting_in_line_holds_off_the_background() -> None:
    """Under the limited tier an answer that must wait for the minute's call is not overtaken:
    the background tries while the answer sleeps and gets nothing."""
    clock = FakeClock(1_000.0)
    limiter = tiered("limited", clock)
    assert limiter.try_background(HISTORY)  # the backfill took this minute's call
    tried: list[bool] = []

    def sleep(seconds: float) -> None:
        for _ in range(3):
            clock.advance(seconds / 3)
            tried.append(limiter.try_background(HISTORY))

    limiter.acquire(HISTORY, sleep=sleep)
    assert tried == [False, False, False]
    assert not limiter.try_background(HISTORY)  # and not just after it either
    clock.advance(59.0)
    assert not limiter.try_background(HISTORY)


def test_two_methods_together_keep_to_the_share_of_the_workspace_budget() -> None:
    """History and replies have 50 a minute each, the workspace 40 for both: a backfill
    calling both as fast as it may takes 32 a minute in all, not 64."""
    clock = FakeClock(0.0)
    limiter = tiered("standard", clock)
    taken = 0
    for _ in range(600):  # ten minutes, both methods tried every second
        clock.advance(1.0)
        taken += limiter.try_background(HISTORY) + limiter.try_background(REPLIES)
    assert 280 <= taken <= 321  # 32 a minute at most (tries a second apart round it down)
    assert limiter.wait_time(HISTORY) == 0.0


def test_the_background_keeps_to_its_share_of_the_budget() -> None:
    clock = FakeClock(0.0)
    limiter = tiered("limited", clock)
    taken = 0
    for _ in range(600):  # ten minutes, one try a second
        clock.advance(1.0)
        taken += limiter.try_background(HISTORY)
    assert 7 <= taken <= 9  # 80% of one call a minute


def test_a_shortened_minute_keeps_the_limited_tier_at_one_call_at_a_time() -> None:
    """Against a fake Slack whose minute lasts 2 s: one call, then the next 2 s later (never a
    burst of the calls a real minute would hold)."""
    clock = FakeClock(0.0)
    tier = slack_tier("limited")
    limiter = RateLimiter(
        calls_per_minute=tier.workspace_per_minute, per_method=tier.per_method(),
        clock=clock, minute=2.0,
    )  # fmt: skip
    assert limiter.try_acquire(HISTORY)
    assert not limiter.try_acquire(HISTORY)
    assert limiter.wait_time(HISTORY) == pytest.approx(2.0)
    clock.advance(2.0)
    assert limiter.try_acquire(HISTORY)
    with pytest.raises(ValueError, match="minute must be a positive number of seconds, got 0"):
        RateLimiter(minute=0)


def test_a_429_holds_the_background_too() -> None:
    clock = FakeClock(0.0)
    limiter = tiered("standard", clock)
    limiter.penalize(HISTORY, 30.0)
    assert not limiter.try_background(HISTORY)
    assert limiter.background.wait_time(HISTORY) == pytest.approx(30.0)
    clock.advance(30.0)
    assert limiter.background.try_acquire(HISTORY)


def test_the_tiers_as_slack_documents_them() -> None:
    assert slack_tier("limited").per_method() == {HISTORY: 1.0, REPLIES: 1.0}
    assert slack_tier("limited").page == 15
    assert slack_tier("standard").per_method()[HISTORY] == 50.0
    with pytest.raises(ValueError, match="slack tier must be one of standard, limited, got 'gold'"):
        slack_tier("gold")
